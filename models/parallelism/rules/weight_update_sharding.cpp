// Weight-update sharding (Xu et al. 2020; parallelism.weight_update_sharding): the optimizer is
// sharded over the replica axes. Each bucket's gradients are reduce-scattered (each core keeps
// the sum of its 1/replicas shard), the optimizer updates 1/replicas of the weights and slots,
// and each bucket ends with an all-gather of its bf16 weights. LAMB/LARS norms of the sharded
// weights are partial over the replica axes.
#include "models/parallelism/rules/sharding_rule.hpp"

namespace tpusim {
namespace {

class WeightUpdateSharding final : public ShardingRule {
 public:
  bool live(const Layout& l) const override { return l.weight_update_sharding && l.replicas() > 1; }
  bool syncs_gradients() const override { return true; }

  void sync_bucket(PartitionState& s, Bucket& b) override {
    // Each core keeps the sum of its 1/replicas shard.
    s.program.ops[s.emit_bucket_sync(b, CollectiveKind::ReduceScatter)].output.bytes =
        b.grad_bytes / s.layout.replicas();
  }

  double optimizer_divisor(const Layout& l) const override { return l.replicas(); }

  void optimizer_shard_axes(const OpNode& owner, const Layout& l,
                            std::vector<std::string>& axes) const override {
    const auto replica = l.replica_axes();
    axes.insert(axes.end(), replica.begin(), replica.end());
  }

  void after_bucket_update(PartitionState& s, const Bucket& b,
                           const std::vector<int>& last_ops) override {
    double weight_bytes = 0;
    for (int o : b.owners)
      weight_bytes += s.params_per_core(o) * s.graph.node(o).weight_copy_bytes();
    const int gather = s.emit_collective("opt.bucket." + std::to_string(b.index) + ".all-gather",
                                         CollectiveKind::AllGather, Phase::Optimizer, weight_bytes,
                                         DType::BF16, s.layout.replica_axes(), last_ops);
    s.program.ops[gather].output.bytes = 0;  // gathers into the resident bf16 copies
  }
};

const ShardingRuleRegistrar kWeightUpdateShardingRule{
    "weight_update_sharding", 20, [] { return std::make_unique<WeightUpdateSharding>(); }};

}  // namespace
}  // namespace tpusim
