#include "models/parallelism/compiler_hints.hpp"

#include "models/parallelism/spatial.hpp"

namespace tpusim {

FusionRole fusion_role_of(const OpNode& n) {
  if (n.phase == Phase::Optimizer) return FusionRole::Opaque;
  switch (n.kind) {
    case OpKind::Matmul:
    case OpKind::Conv:
    case OpKind::OneHotMatmul:
      return FusionRole::Mxu;
    case OpKind::BatchNorm:
      return n.partial_bytes > 0 ? FusionRole::Reduction : FusionRole::Vector;
    case OpKind::Elementwise:
    case OpKind::Softmax:
    case OpKind::LayerNorm:
    case OpKind::Pool:
      return FusionRole::Vector;
    default:
      return FusionRole::Opaque;
  }
}

std::vector<std::int64_t> per_core_out_shape(const OpNode& n, const Layout& layout,
                                             const std::optional<MatmulShape>& matmul,
                                             bool* feature_map) {
  *feature_map = false;
  if (n.conv) {
    if (n.weight_grad || fusion_role_of(n) == FusionRole::Reduction) return {};
    const ConvShape& c = *n.conv;
    const bool input_side = n.phase == Phase::Backward;  // the gradient of the op's input
    std::int64_t h = input_side ? c.height : c.out_height;
    std::int64_t w = input_side ? c.width : c.out_width;
    const std::int64_t ch = input_side ? c.in_channels : c.out_channels;
    if (n.split.spatial != SplitDim::None && layout.spatial > 1) {
      h = rows_per_core(h, layout.spatial / layout.spatial_w);
      w = rows_per_core(w, layout.spatial_w);
    }
    if (c.batch <= 0 || h <= 0 || w <= 0 || ch <= 0) return {};
    *feature_map = true;
    return {c.batch, h, w, ch};
  }
  if (matmul && matmul->m > 0 && matmul->n > 0) return {matmul->m, matmul->n};
  return {};
}

}  // namespace tpusim
