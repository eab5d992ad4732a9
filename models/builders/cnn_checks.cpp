#include "models/builders/cnn_checks.hpp"

#include "core/errors.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/spatial.hpp"

namespace tpusim {

void check_spatial_split(const Config& cfg, std::int64_t rows, std::int64_t cols,
                         const std::string& rows_path, const std::string& cols_path) {
  const std::int64_t degree = kParallelismSpatial(cfg);
  const std::int64_t w = spatial_w_param()(cfg);
  if (degree % w != 0) return;  // reported by the layout (parallelism.spatial_w)
  const std::int64_t h = degree / w;
  if (h > rows)
    throw ConfigError(kParallelismSpatial.path(),
                      std::to_string(h) + " cores cannot split the " + std::to_string(rows) +
                          " rows of the first feature map (" + rows_path + "); allowed: at most " +
                          std::to_string(rows) + " along H");
  if (w > cols)
    throw ConfigError(spatial_w_param().path(),
                      std::to_string(w) + " cores cannot split the " + std::to_string(cols) +
                          " columns of the first feature map (" + cols_path +
                          "); allowed: at most " + std::to_string(cols));
}

}  // namespace tpusim
