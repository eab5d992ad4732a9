#pragma once
// Layout checks shared by the convolutional builders.
#include <cstdint>
#include <string>

#include "core/config.hpp"

namespace tpusim {

/// Throws ConfigError naming parallelism.spatial (or parallelism.spatial_w) when the cores that
/// split H (spatial / spatial_w) exceed `rows` or those that split W exceed `cols`, the size of
/// the first feature map (from the parameters at `rows_path` and `cols_path`): a core would get no
/// pixels at all.
/// Degrees that do not divide a map are allowed: the last cores hold padding
/// (models/parallelism/spatial.hpp).
void check_spatial_split(const Config& cfg, std::int64_t rows, std::int64_t cols,
                         const std::string& rows_path, const std::string& cols_path);

}  // namespace tpusim
