#include "models/builders/cnn_checks.hpp"

#include "core/errors.hpp"

namespace tpusim {

void check_spatial_rows(const Config& cfg, std::int64_t rows, const std::string& rows_path) {
  const std::int64_t degree = cfg.integer("parallelism.spatial");
  if (degree > rows)
    throw ConfigError("parallelism.spatial",
                      std::to_string(degree) + " cores cannot split the " + std::to_string(rows) +
                          " rows of the first feature map (" + rows_path +
                          "); allowed: at most " + std::to_string(rows));
}

}  // namespace tpusim
