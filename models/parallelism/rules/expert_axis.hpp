#pragma once
// The expert axis's degree parameter (expert_axis.cpp declares it), for the builder that sizes
// the experts each device holds from the study alone.
#include <cstdint>

#include "core/param_handle.hpp"

namespace tpusim {

extern const Param<std::int64_t> kParallelismExpert;

}  // namespace tpusim
