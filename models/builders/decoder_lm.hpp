#pragma once
// The decoder-only language model's parameters other folders read from a validated study
// (decoder_lm.cpp declares them): workload.remat, whose presence marks a language model and
// whose choices plan searches.
#include <string>

#include "core/param_handle.hpp"

namespace tpusim {

extern const Param<std::string> kDecoderLmRemat;

}  // namespace tpusim
