#include "models/parallelism/batch_norm_groups.hpp"

#include "core/errors.hpp"
#include "core/params.hpp"
#include "models/parallelism/layout.hpp"

namespace tpusim {
namespace {
using T = ParamType;
constexpr const char* kPath = "parallelism.bn_group_cores";
constexpr const char* kMeaning =
    "cores whose batch-norm statistics are all-reduced together (cross-replica BN over "
    "neighbouring replicas, a whole number of replicas); 0: the cores of one replica";

ParamSpec group_param(const char* model) {
  return {kPath, T::Integer, "cores", 0, kMeaning, 0, 1 << 20, {}, "workload.model", model};
}

// Mask R-CNN trains with frozen batch norm (docs/cnn.md), so it has no group.
// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kBatchNormGroupsParams{{group_param("resnet50"), group_param("ssd")}};
// clang-format on

std::string str(long long v) { return std::to_string(v); }

}  // namespace

int read_bn_group(const Config& cfg, const Layout& l) {
  if (!cfg.has(kPath)) return 1;
  const long long group_cores = cfg.integer(kPath);
  if (group_cores == 0) return 1;
  const long long replica_cores = static_cast<long long>(l.spatial) * l.model;
  if (group_cores > l.cores)
    throw ConfigError(kPath, str(group_cores) + " cores is larger than the " + str(l.cores) +
                                 " cores of the topology; allowed: 0 or a multiple of " +
                                 str(replica_cores) + " up to " + str(l.cores));
  if (group_cores % replica_cores != 0)
    throw ConfigError(kPath, str(group_cores) + " is not a whole number of replicas of " +
                                 str(replica_cores) + " cores (spatial " + str(l.spatial) +
                                 " x model " + str(l.model) + "); allowed: 0 or a multiple of " +
                                 str(replica_cores));
  const long long replicas = group_cores / replica_cores;
  if (l.data % replicas != 0)
    throw ConfigError(kPath, str(group_cores) + " cores = " + str(replicas) +
                                 " replicas per group do not divide the " + str(l.data) +
                                 " data replicas; allowed: 0 or a multiple of " +
                                 str(replica_cores) + " whose replica count divides " +
                                 str(l.data));
  return static_cast<int>(replicas);
}

}  // namespace tpusim
