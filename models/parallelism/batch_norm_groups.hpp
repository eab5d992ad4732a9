#pragma once
// Cross-replica batch norm: the statistics of a batch-norm layer are summed over a group of
// neighbouring cores (MLPerf v0.7 ResNet-50: groups of 8 cores; SSD: 16). The group is given in
// cores by parallelism.bn_group_cores and must be whole replicas: the cores of one replica
// (spatial x model) always share statistics (a spatially split image is one image), and the
// group adds neighbouring data replicas, laid out as the mesh axis "bn" right outside "spatial".
#include "core/config.hpp"
#include "core/param_handle.hpp"

namespace tpusim {

struct Layout;

/// Data replicas per batch-norm group for `layout` (whose data/spatial/model are set): 1 when the
/// study's model has no parallelism.bn_group_cores or it is 0. Throws ConfigError naming
/// parallelism.bn_group_cores when the group is larger than the cores, is not a whole number of
/// replicas, or does not divide the data replicas.
int read_bn_group(const Config& cfg, const Layout& layout);
/// parallelism.bn_group_cores, declared for every model whose registration names the feature
/// "batch_norm_groups" (ModelInfo::features).
const ParamFamily<std::int64_t>& bn_group_param();

}  // namespace tpusim
