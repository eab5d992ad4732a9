#include "tools/run/kernel_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/tiled_layout.hpp"
#include "core/errors.hpp"
#include "models/conv_ops.hpp"
#include "models/ops.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "tools/study/study.hpp"
#include "tools/sweep/readable.hpp"

namespace tpusim::cli {
namespace {

using Shape = std::vector<std::int64_t>;

constexpr const char* kOps = "matmul, conv, elementwise, reduction, attention";
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;

/// --shape as positive integers; `forms` names the forms --op takes, for the error.
Shape parse_shape(const std::string& text, std::size_t min_dims, std::size_t max_dims,
                  const std::string& forms) {
  Shape s;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1 || v > kMaxDim)
      throw ConfigError("--shape", "'" + item + "' in '" + text +
                                       "' is not a whole number from 1 to 2^40; expected " + forms);
    s.push_back(v);
  }
  if (s.size() < min_dims || s.size() > max_dims)
    throw ConfigError("--shape", "'" + text + "' has " + std::to_string(s.size()) +
                                     " numbers; expected " + forms);
  return s;
}

/// Bounds the work of one kernel so that its time stays within the simulator's clock (about
/// 9e6 s): at most 2^48 elements in a tensor and 2^60 multiply-adds.
void check_size(const std::string& text, double elements, double macs) {
  if (elements > std::ldexp(1.0, 48) || macs > std::ldexp(1.0, 60))
    throw ConfigError("--shape", "'" + text +
                                     "' is too large: at most 2^48 elements in a tensor and 2^60 "
                                     "multiply-adds in one kernel");
}

std::string dims(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

struct Types {
  KernelDType kind;
  int in_bytes, out_bytes;
  DType tile;  ///< the dtype whose (8|16, 128) tile pads its arrays
  DType mxu;   ///< the MXU operands' dtype: int8 and fp8 run at the chip's rate
};

/// --dtype; an int8 or fp8 kernel's MXU passes run at the chip's rate (ComputeCost::mxu_dtype,
/// the cost formula every op uses), which must be set.
Types parse_types(const std::string& dtype, const HardwareSpec& hw) {
  if (dtype == "bf16") return {KernelDType::BF16, 2, 2, DType::BF16, DType::BF16};
  if (dtype == "f32") return {KernelDType::F32, 4, 4, DType::F32, DType::F32};
  const bool int8 = dtype == "int8";
  if (!int8 && dtype != "fp8")
    throw ConfigError("--dtype", "unknown dtype '" + dtype + "'; allowed: bf16, f32, int8, fp8");
  const double rate = int8 ? hw.mxu.int8_rate : hw.mxu.fp8_rate;
  if (rate <= 0)
    throw ConfigError("--dtype", fmt::format("{}: hardware.mxu.{}_rate is 0 on {} (no published "
                                             "{} rate); set it or use bf16 or f32",
                                             dtype, dtype, hw.name, dtype));
  // An int8 product accumulates in int32, an fp8 one is written as bf16. 8-bit arrays are
  // padded as bf16's (16, 128) tiles: XLA's (32, 128) would pad their rows more.
  return {int8 ? KernelDType::Int8 : KernelDType::FP8, 1, int8 ? 4 : 2, DType::BF16,
          int8 ? DType::I8 : DType::F8};
}

double padded(const Shape& s, const Types& t, bool feature_map = false) {
  return padded_elements(s, t.tile, feature_map);
}

double product(const Shape& s) {
  double p = 1;
  for (auto d : s) p *= static_cast<double>(d);
  return p;
}

Kernel matmul_kernel(const std::string& shape, const Types& t, const std::string& dtype) {
  const Shape s = parse_shape(shape, 3, 4, "M,N,K or B,M,N,K for matmul");
  const std::int64_t b = s.size() == 4 ? s[0] : 1;
  const std::int64_t m = s[s.size() - 3], n = s[s.size() - 2], k = s[s.size() - 1];
  check_size(shape, std::max({1.0 * b * m * k, 1.0 * b * k * n, 1.0 * b * m * n}),
             1.0 * b * m * n * k);
  Kernel kr;
  kr.cost.matmul = MatmulShape{b, m, k, n};
  kr.cost.mxu_dtype = t.mxu;
  kr.cost.flops = kr.cost.matmul->flops();
  kr.cost.bytes_read = (padded({b, m, k}, t) + padded({b, k, n}, t)) * t.in_bytes;
  kr.cost.bytes_written = padded({b, m, n}, t) * t.out_bytes;
  kr.description = fmt::format("matmul {}{}x{} {}", b > 1 ? std::to_string(b) + " x " : "",
                               dims({m, k}), dims({k, n}), dtype);
  return kr;
}

Kernel conv_kernel(const std::string& shape, const Types& t, const std::string& dtype, int dim) {
  const Shape s = parse_shape(shape, 6, 7, "N,H,W,Cin,Cout,KERNEL[,STRIDE] for conv");
  if (s[5] > 64 || (s.size() == 7 && s[6] > 64))
    throw ConfigError("--shape", "'" + shape + "': the kernel and stride are at most 64");
  const int stride = s.size() == 7 ? static_cast<int>(s[6]) : 1;
  check_size(shape, std::max(1.0 * s[0] * s[1] * s[2] * std::max(s[3], s[4]), 1.0 * s[3] * s[4]),
             1.0 * s[0] * s[1] * s[2] * s[3] * s[4] * s[5] * s[5]);
  const FeatureMap in{s[0], s[1], s[2], s[3]};
  const OpNode node = conv2d("conv", in, s[4], static_cast<int>(s[5]), stride, dim);
  const FeatureMap out = output_of(node);
  Kernel kr;
  kr.cost.matmul = node.matmul;
  kr.cost.mxu_dtype = t.mxu;
  kr.cost.flops = node.flops;
  kr.cost.bytes_read = (padded({in.batch, in.height, in.width, in.channels}, t, true) +
                        padded({s[5] * s[5] * s[3], s[4]}, t)) *
                       t.in_bytes;
  kr.cost.bytes_written =
      padded({out.batch, out.height, out.width, out.channels}, t, true) * t.out_bytes;
  kr.description = fmt::format("conv {} of {} filters {}x{} stride {} -> {} {}",
                               dims(Shape(s.begin(), s.begin() + 4)), s[4], s[5], s[5], stride,
                               dims({out.batch, out.height, out.width, out.channels}), dtype);
  return kr;
}

Kernel vector_kernel(const std::string& op, const std::string& shape, const Types& t,
                     const std::string& dtype) {
  const bool reduce = op == "reduction";
  const Shape s = parse_shape(shape, reduce ? 2 : 1, 8,
                              reduce ? "2 to 8 dimensions for reduction (the last is summed)"
                                     : "1 to 8 dimensions for elementwise");
  check_size(shape, product(s), 0);
  Kernel kr;
  const double elements = padded(s, t);
  kr.cost.vpu_elements = elements;
  kr.cost.vpu_ops_per_element = 1;  // one add per element, of x + y or of the running sum
  kr.cost.flops = product(s);
  if (reduce) {
    const Shape out(s.begin(), s.end() - 1);
    kr.cost.bytes_read = elements * t.in_bytes;
    kr.cost.bytes_written = padded(out, t) * t.in_bytes;
    kr.description = fmt::format("reduction sum over the last dimension of {} {}", dims(s), dtype);
  } else {
    kr.cost.bytes_read = 2 * elements * t.in_bytes;
    kr.cost.bytes_written = elements * t.in_bytes;
    kr.description = fmt::format("elementwise x + y of {} {}", dims(s), dtype);
  }
  return kr;
}

/// Fused attention: scores Q K^T and context P V on the MXUs, the softmax on the vector unit,
/// the [S, S] scores kept on chip. Both products have B*H*ceil(D/dim)*ceil(S/dim) weight tiles
/// of S-row passes, so one MatmulShape of 2*B*H [S,D]x[D,S] products has their cycles.
Kernel attention_kernel(const std::string& shape, const Types& t, const std::string& dtype) {
  const Shape s =
      parse_shape(shape, 4, 4, "B,H,S,D for attention (batch, heads, sequence, head dim)");
  check_size(shape, std::max(product(s), 1.0 * s[0] * s[1] * s[2] * s[2]),
             2.0 * s[0] * s[1] * s[2] * s[2] * s[3]);
  const std::int64_t bh = s[0] * s[1], seq = s[2], d = s[3];
  Kernel kr;
  kr.cost.matmul = MatmulShape{2 * bh, seq, d, seq};
  kr.cost.mxu_dtype = t.mxu;
  kr.cost.flops = 4.0 * bh * seq * seq * d;
  kr.cost.vpu_elements = static_cast<double>(bh) * seq * seq;
  kr.cost.vpu_ops_per_element = vpu_ops::kSoftmax;
  kr.cost.bytes_read = 3 * padded(s, t) * t.in_bytes;
  kr.cost.bytes_written = padded(s, t) * t.in_bytes;
  kr.description = fmt::format("attention softmax(Q K^T) V of Q, K, V {} {}", dims(s), dtype);
  return kr;
}

struct Term {
  const char* key;
  const char* label;
  Duration time;
};

std::vector<Term> terms_of(const OpTiming& t) {
  return {{"launch_ns", "launch", t.launch},
          {"mxu_tiles_ns", "MXU tiles", t.mxu - t.mxu_fill_drain},
          {"fill_drain_ns", "fill and drain", t.mxu_fill_drain},
          {"hbm_ns", "HBM", t.hbm},
          {"vector_ns", "vector", t.vpu},
          {"pipeline_ns", "first and last block", t.pipeline}};
}

/// The resource the op waits on: the longest of MXU, vector unit and HBM, or its fixed costs
/// when those are longer.
std::string bound_of(const OpTiming& t) {
  const Duration longest = max(max(t.mxu, t.vpu), t.hbm);
  if (t.fixed() > longest) return "fixed costs";
  if (longest == t.mxu) return "MXU";
  return longest == t.hbm ? "HBM" : "vector unit";
}

}  // namespace

Kernel make_kernel(const std::string& op, const std::string& shape, const std::string& dtype,
                   const HardwareSpec& hw) {
  const bool known = op == "matmul" || op == "conv" || op == "elementwise" || op == "reduction" ||
                     op == "attention";
  if (!known) throw ConfigError("--op", "unknown op '" + op + "'; allowed: " + kOps);
  const Types t = parse_types(dtype, hw);
  if (op == "matmul") return matmul_kernel(shape, t, dtype);
  if (op == "conv") return conv_kernel(shape, t, dtype, hw.mxu.dim);
  if (op == "attention") return attention_kernel(shape, t, dtype);
  return vector_kernel(op, shape, t, dtype);
}

void run_kernel(const KernelArgs& a) {
  const Study study = load_study({{"preset", a.preset}}, a.sets, "(command line)");
  const HardwareSpec& hw = study.hardware;
  const Kernel k = make_kernel(a.op, a.shape, a.dtype, hw);
  const OpTiming t = compute_op_time(hw, k.cost);
  const double s = t.total.seconds();
  const double bytes = k.cost.bytes_read + k.cost.bytes_written;
  const double peak =
      hw.peak_flops_per_core() * mxu_rows_per_pass(hw.mxu, k.cost.mxu_dtype) / hw.mxu.rows_per_pass;
  const std::string bound = bound_of(t);
  if (a.json) {
    nlohmann::json terms;
    for (const Term& term : terms_of(t)) terms[term.key] = term.time.ns();
    nlohmann::json j = {{"schema_version", 1},
                        {"tpusim_version", TPUSIM_VERSION},
                        {"op", a.op},
                        {"kernel", k.description},
                        {"dtype", a.dtype},
                        {"hardware", hw.name},
                        {"time_ns", t.total.ns()},
                        {"flops", k.cost.flops},
                        {"tflops", k.cost.flops / s * 1e-12},
                        {"peak_tflops", k.cost.matmul ? peak * 1e-12 : 0.0},
                        {"bytes", bytes},
                        {"bytes_per_s", bytes / s},
                        {"bound", bound},
                        {"terms", terms},
                        {"config", study.config.json()}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} on one {} device\n", k.description, hw.name)
            << fmt::format("  time              {}\n", readable_duration_ms(t.total.ms()))
            << fmt::format("  achieved          {:.4g} TFLOP/s{}\n", k.cost.flops / s * 1e-12,
                           k.cost.matmul ? fmt::format(" ({:.1f}% of the {:.4g} TFLOP/s peak)",
                                                       100 * k.cost.flops / s / peak, peak * 1e-12)
                                         : std::string(" (vector ops)"))
            << fmt::format("  HBM               {} at {:.4g} GB/s\n", format_bytes(bytes),
                           bytes / s * 1e-9)
            << fmt::format("  bound by          {}\n", bound) << "  cost terms       ";
  for (const Term& term : terms_of(t))
    std::cout << fmt::format(" {} {};", term.label, readable_duration_ms(term.time.ms()));
  std::cout << "\n  (time = launch + first and last block + the longest of MXU, HBM, vector)\n";
}

}  // namespace tpusim::cli
