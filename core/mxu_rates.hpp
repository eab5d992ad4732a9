#pragma once
// The MXUs' int8 and fp8 rates over bf16 as parameters (core/hardware.cpp declares them), for
// readers that decide from the study alone: plan searches a quantization only where it is faster.
#include "core/param_handle.hpp"

namespace tpusim {

extern const Param<double> kHwMxuInt8Rate, kHwMxuFp8Rate;

}  // namespace tpusim
