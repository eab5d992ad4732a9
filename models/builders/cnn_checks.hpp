#pragma once
// Layout checks shared by the convolutional builders.
#include <cstdint>
#include <string>

#include "core/config.hpp"

namespace tpusim {

/// Throws ConfigError("parallelism.spatial") when the spatial degree exceeds `rows`, the rows of
/// the first feature map (from the parameter at `rows_path`): a core would get no image rows at
/// all. Degrees that do not divide a map's rows are allowed: the last cores hold padding
/// (models/parallelism/spatial.hpp).
void check_spatial_rows(const Config& cfg, std::int64_t rows, const std::string& rows_path);

}  // namespace tpusim
