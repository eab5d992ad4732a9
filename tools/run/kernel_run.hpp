#pragma once
// `tpusim kernel` as a library call: one compute op (a matmul, a convolution, an elementwise op,
// a reduction, a fused attention) on one device of a preset, timed by the cost model the
// simulator plays every compute op with (sim/core/tensor_core_cost.hpp), not a second model.
#include <string>
#include <vector>

#include "core/hardware.hpp"
#include "models/program.hpp"

namespace tpusim::cli {

struct KernelArgs {
  std::string op;
  std::string shape;
  std::string dtype = "bf16";
  std::string preset = "tpu_v3";
  std::vector<std::string> sets;
  bool json = false;
};

/// The operand element types of a kernel: bf16, f32, int8, fp8.
enum class KernelDType { BF16, F32, Int8, FP8 };

/// One kernel as the cost model sees it: its ComputeCost on one device, and its useful FLOPs
/// (vector ops for an op without a matmul).
struct Kernel {
  std::string description;  ///< e.g. "matmul [4096,4096]x[4096,4096] bf16"
  ComputeCost cost;
};

/// Builds the kernel of --op, --shape, --dtype for `hw` (its MXU dimension lowers a
/// convolution; an int8 or fp8 kernel's ComputeCost::mxu_dtype makes the cost formula run its
/// MXU passes at the chip's rate, which must be set). Operand and result bytes are padded to XLA's
/// (8|16, 128) tiles. Throws ConfigError naming --op, --shape or --dtype.
Kernel make_kernel(const std::string& op, const std::string& shape, const std::string& dtype,
                   const HardwareSpec& hw);

/// Times the kernel and prints time, achieved TFLOP/s and bytes/s, the bound resource and the
/// cost terms (text or JSON). Throws ConfigError on bad input.
void run_kernel(const KernelArgs& a);

}  // namespace tpusim::cli
