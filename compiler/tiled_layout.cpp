#include "compiler/tiled_layout.hpp"

#include <algorithm>
#include <cmath>

namespace tpusim {
namespace {

double product(const std::vector<std::int64_t>& s) {
  double p = 1;
  for (std::int64_t d : s) p *= static_cast<double>(d);
  return p;
}

// Per op: whether its output must keep the convolution's layout (channels on the lanes) because
// an MXU op reads it, directly or through ops that keep their operand's layout (vector ops,
// reductions, collectives), as layout assignment propagates an operand's layout constraint back
// through element-wise producers. A reverse sweep: readers come after what they read.
std::vector<bool> convolution_layouts(const Program& p) {
  std::vector<bool> constrained(p.ops.size(), false);
  for (std::size_t i = p.ops.size(); i-- > 0;) {
    const Op& op = p.ops[i];
    const bool mxu = op.fusion_role == FusionRole::Mxu;
    const bool passes = op.is_collective || op.fusion_role == FusionRole::Vector ||
                        op.fusion_role == FusionRole::Reduction;
    if (!mxu && !(passes && constrained[i])) continue;
    for (const DataRead& r : op.reads)
      if (r.producer >= 0) constrained[static_cast<std::size_t>(r.producer)] = true;
  }
  return constrained;
}

}  // namespace

double pad_to(std::int64_t x, int tile) { return std::ceil(static_cast<double>(x) / tile) * tile; }

int tile_rows(DType dtype) { return dtype_bytes(dtype) == 2 ? 16 : 8; }

double padded_elements(const std::vector<std::int64_t>& shape, DType dtype, bool feature_map) {
  const double logical = product(shape);
  if (shape.size() < 2 || logical <= 0) return logical;
  const int rows = tile_rows(dtype);
  const std::size_t n = shape.size();
  if (feature_map) {  // C minor; the second-minor one of the others that pads least
    const double minor = pad_to(shape[n - 1], kTileLanes);
    double best = 0;
    for (std::size_t j = 0; j + 1 < n; ++j) {
      const double others = logical / static_cast<double>(shape[n - 1]) / shape[j];
      const double e = others * pad_to(shape[j], rows) * minor;
      best = j == 0 ? e : std::min(best, e);
    }
    return best;
  }
  const double major = logical / static_cast<double>(shape[n - 1]) / shape[n - 2];
  return major * pad_to(shape[n - 2], rows) * pad_to(shape[n - 1], kTileLanes);
}

double least_padded_elements(const std::vector<std::int64_t>& shape, DType dtype) {
  const double logical = product(shape);
  if (shape.size() < 2 || logical <= 0) return logical;
  const int rows = tile_rows(dtype);
  double best = -1;
  for (std::size_t minor = 0; minor < shape.size(); ++minor)
    for (std::size_t second = 0; second < shape.size(); ++second) {
      if (second == minor) continue;
      const double others = logical / static_cast<double>(shape[minor]) / shape[second];
      const double e = others * pad_to(shape[second], rows) * pad_to(shape[minor], kTileLanes);
      if (best < 0 || e < best) best = e;
    }
  return best;
}

double padding_factor(const Op& op, bool free_layout) {
  if (op.is_collective || op.out_shape.empty()) return 1;
  const double logical = product(op.out_shape);
  if (logical <= 0) return 1;
  if (free_layout && op.feature_map)
    return least_padded_elements(op.out_shape, op.output.dtype) / logical;
  return padded_elements(op.out_shape, op.output.dtype, op.feature_map) / logical;
}

void apply_tiled_layouts(Program& p) {
  const std::vector<bool> constrained = convolution_layouts(p);
  std::vector<double> factor(p.ops.size(), 1);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    Op& op = p.ops[i];
    factor[i] = padding_factor(op, !constrained[i]);
    const double f = factor[i];
    for (DataRead& r : op.reads) {
      const double fp = factor[r.producer];
      op.compute.bytes_read += r.bytes * (fp - 1);
      op.padding_bytes += r.bytes * (fp - 1);
      r.bytes *= fp;
    }
    if (f == 1) continue;
    op.padding_bytes += op.compute.bytes_written * (f - 1);
    op.compute.bytes_written *= f;
    op.compute.vpu_elements *= f;
    op.output.bytes *= f;
  }
}

}  // namespace tpusim
