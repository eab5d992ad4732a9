#include "models/parallelism/batch_norm_groups.hpp"

#include "core/errors.hpp"
#include "core/param_handle.hpp"
#include "models/model_builder.hpp"
#include "models/parallelism/layout.hpp"

namespace tpusim {

const ParamFamily<std::int64_t>& bn_group_param() {
  // clang-format off
  static const ParamFamily<std::int64_t> family{{"parallelism.bn_group_cores", ParamType::Integer, "cores", 0, "", 0, 1 << 20, {}, "workload.model"}};
  // clang-format on
  return family;
}

namespace {
// Mask R-CNN trains with frozen batch norm (docs/cnn.md): its registration does not name the
// feature, so it has no group.
void declare_bn_group(const std::string& model) {
  bn_group_param().declare(
      model, 0,
      "cores whose batch-norm statistics are all-reduced together (cross-replica BN over "
      "neighbouring replicas, a whole number of replicas); 0: the cores of one replica");
}
const ModelFeatureRegistrar kBatchNormGroupsFeature{"batch_norm_groups", &declare_bn_group};

std::string str(long long v) { return std::to_string(v); }

}  // namespace

int read_bn_group(const Config& cfg, const Layout& l) {
  const std::string& path = bn_group_param().path();
  const long long group_cores = bn_group_param().if_applies(cfg).value_or(0);
  if (group_cores == 0) return 1;
  const long long replica_cores = static_cast<long long>(l.spatial) * l.model;
  if (group_cores > l.cores)
    throw ConfigError(path, str(group_cores) + " cores is larger than the " + str(l.cores) +
                                " cores of the topology; allowed: 0 or a multiple of " +
                                str(replica_cores) + " up to " + str(l.cores));
  if (group_cores % replica_cores != 0)
    throw ConfigError(path, str(group_cores) + " is not a whole number of replicas of " +
                                str(replica_cores) + " cores (spatial " + str(l.spatial) +
                                " x model " + str(l.model) + "); allowed: 0 or a multiple of " +
                                str(replica_cores));
  const long long replicas = group_cores / replica_cores;
  if (l.data % replicas != 0)
    throw ConfigError(path, str(group_cores) + " cores = " + str(replicas) +
                                " replicas per group do not divide the " + str(l.data) +
                                " data replicas; allowed: 0 or a multiple of " +
                                str(replica_cores) + " whose replica count divides " + str(l.data));
  return static_cast<int>(replicas);
}

}  // namespace tpusim
