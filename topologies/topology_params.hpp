#pragma once
// The topology parameters other folders read from a validated study (topology.cpp declares
// them): topology.slices, for readers that decide from the study alone (plan searches FSDP only
// inside one slice).
#include <cstdint>

#include "core/param_handle.hpp"

namespace tpusim {

extern const Param<std::int64_t> kTopologySlices;

}  // namespace tpusim
