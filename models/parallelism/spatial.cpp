#include "models/parallelism/spatial.hpp"

#include <limits>

#include "core/errors.hpp"
#include "core/param_handle.hpp"
#include "models/model_builder.hpp"
#include "models/parallelism/layout.hpp"

namespace tpusim {
namespace {

void declare_spatial_w(const std::string& model) {
  spatial_w_param().declare(model, 1,
                            "of the parallelism.spatial cores, how many split W (the rest split "
                            "H): 1 splits H only; must divide parallelism.spatial");
}
const ModelFeatureRegistrar kSpatialWFeature{"spatial_w", &declare_spatial_w};

bool is_feature_map(const OpNode& n) {
  return n.conv && n.conv->out_height > 0 && n.conv->out_width > 0;
}

// Padded output pixels of one core.
std::int64_t pixels_per_core(const ConvShape& c, int degree, int degree_w) {
  return rows_per_core(c.out_height, degree / degree_w) * rows_per_core(c.out_width, degree_w);
}

}  // namespace

std::int64_t rows_per_core(std::int64_t rows, int degree) {
  return degree <= 1 ? rows : (rows + degree - 1) / degree;
}

std::int64_t spatial_shard(const OpNode& n, std::int64_t dim, int degree, int degree_w) {
  if (degree <= 1) return dim;
  if (is_feature_map(n)) {
    const std::int64_t pixels = n.conv->out_height * n.conv->out_width;
    if (dim % pixels == 0) return dim / pixels * pixels_per_core(*n.conv, degree, degree_w);
  }
  return (dim + degree - 1) / degree;
}

double spatial_fraction(const OpNode& n, int degree, int degree_w) {
  if (degree <= 1) return 1;
  if (is_feature_map(n))
    return static_cast<double>(pixels_per_core(*n.conv, degree, degree_w)) /
           (static_cast<double>(n.conv->out_height) * n.conv->out_width);
  return 1.0 / degree;
}

double halo_bytes(std::int64_t rows, std::int64_t width, std::int64_t channels, std::int64_t batch,
                  DType dtype) {
  return static_cast<double>(rows) * width * channels * batch * dtype_bytes(dtype);
}

std::vector<HaloExchange> halo_exchanges(const OpNode& n, const Layout& layout) {
  std::vector<HaloExchange> out;
  if (layout.spatial <= 1 || !is_feature_map(n) || n.split.spatial != SplitDim::M || n.weight_grad)
    return out;
  const ConvShape& c = *n.conv;
  const int w_degree = layout.spatial_w, h_degree = layout.spatial / layout.spatial_w;
  // Forward: the input map; backward (input gradient): dY, the output map.
  const bool backward = n.phase == Phase::Backward;
  const std::int64_t height = backward ? c.out_height : c.height;
  const std::int64_t width = backward ? c.out_width : c.width;
  const std::int64_t channels = backward ? c.out_channels : c.in_channels;
  if (h_degree > 1 && c.kernel_h / 2 > 0) {
    const std::int64_t rows = c.kernel_h / 2;
    out.push_back(
        {"", w_degree, rows,
         halo_bytes(rows, rows_per_core(width, w_degree), channels, c.batch, DType::BF16)});
  }
  if (w_degree > 1 && c.kernel_w / 2 > 0) {
    const std::int64_t cols = c.kernel_w / 2;
    out.push_back(
        {"_w", 1, cols,
         halo_bytes(cols, rows_per_core(height, h_degree), channels, c.batch, DType::BF16)});
  }
  return out;
}

bool reduces_over_bn_group(const OpNode& n) {
  return n.kind == OpKind::BatchNorm && n.partial_bytes > 0;
}

const ParamFamily<std::int64_t>& spatial_w_param() {
  // clang-format off
  static const ParamFamily<std::int64_t> family{{"parallelism.spatial_w", ParamType::Integer, "cores", 1, "", 1, 1 << 20, {}, "workload.model"}};
  // clang-format on
  return family;
}

int read_spatial_w(const Config& cfg, const Layout& l) {
  const auto w = spatial_w_param().if_applies(cfg).value_or(1);
  if (l.spatial % w != 0)
    throw ConfigError(spatial_w_param().path(),
                      std::to_string(w) +
                          " does not divide parallelism.spatial = " + std::to_string(l.spatial) +
                          "; allowed: a divisor of it (1 splits H only)");
  return static_cast<int>(w);
}

}  // namespace tpusim
