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

double padding_factor(const Op& op) {
  if (op.is_collective || op.out_shape.empty()) return 1;
  const double logical = product(op.out_shape);
  return logical > 0 ? padded_elements(op.out_shape, op.output.dtype, op.feature_map) / logical : 1;
}

void apply_tiled_layouts(Program& p) {
  std::vector<double> factor(p.ops.size(), 1);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    Op& op = p.ops[i];
    factor[i] = padding_factor(op);
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
