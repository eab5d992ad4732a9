// The bn axis (cross-replica batch norm, models/parallelism/batch_norm_groups.hpp): bn_group data
// replicas whose batch-norm statistics are summed together. A batch norm's statistics are
// partial over the group: they are all-reduced over "bn" (with "spatial" when the image is split
// too). The weights are replicated over "bn", like over "data".
#include "models/parallelism/rules/sharding_rule.hpp"
#include "models/parallelism/spatial.hpp"

namespace tpusim {
namespace {

class BatchNormGroupAxis final : public ShardingRule {
 public:
  bool live(const Layout& l) const override { return l.bn_group > 1; }
  bool partial(const OpNode& n, const Layout& l) const override { return reduces_over_bn_group(n); }
};

const ShardingRuleRegistrar kBnAxisRule{"bn", 40,
                                        [] { return std::make_unique<BatchNormGroupAxis>(); }};

}  // namespace
}  // namespace tpusim
