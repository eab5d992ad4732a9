#include "models/parallelism/spatial.hpp"

#include "models/parallelism/layout.hpp"

namespace tpusim {

std::int64_t rows_per_core(std::int64_t rows, int degree) {
  return degree <= 1 ? rows : (rows + degree - 1) / degree;
}

std::int64_t spatial_shard(const OpNode& n, std::int64_t dim, int degree) {
  if (degree <= 1) return dim;
  if (n.conv && n.conv->out_height > 0 && dim % n.conv->out_height == 0)
    return dim / n.conv->out_height * rows_per_core(n.conv->out_height, degree);
  return (dim + degree - 1) / degree;
}

double spatial_fraction(const OpNode& n, int degree) {
  if (degree <= 1) return 1;
  if (n.conv && n.conv->out_height > 0)
    return static_cast<double>(rows_per_core(n.conv->out_height, degree)) / n.conv->out_height;
  return 1.0 / degree;
}

double halo_bytes(std::int64_t rows, std::int64_t width, std::int64_t channels, std::int64_t batch,
                  DType dtype) {
  return static_cast<double>(rows) * width * channels * batch * dtype_bytes(dtype);
}

std::optional<HaloExchange> halo_exchange(const OpNode& n, const Layout& layout) {
  if (layout.spatial <= 1 || !n.conv || n.split.spatial != SplitDim::M || n.weight_grad)
    return std::nullopt;
  const ConvShape& c = *n.conv;
  const std::int64_t rows = c.kernel_h / 2;
  if (rows == 0) return std::nullopt;
  HaloExchange h;
  h.rows = rows;
  // Forward: the input map's rows; backward (input gradient): dY, the output map's rows.
  h.bytes_per_side = n.phase == Phase::Backward
                         ? halo_bytes(rows, c.out_width, c.out_channels, c.batch, DType::BF16)
                         : halo_bytes(rows, c.width, c.in_channels, c.batch, DType::BF16);
  return h;
}

bool reduces_over_bn_group(const OpNode& n) {
  return n.kind == OpKind::BatchNorm && n.partial_bytes > 0;
}

}  // namespace tpusim
