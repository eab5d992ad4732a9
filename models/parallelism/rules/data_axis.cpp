// The data axis: every replica holds the whole weights and runs its share of the batch, so each
// gradient is summed over the replica axes (data, and bn, spatial and sequence when present) by
// one all-reduce per bucket, placed right after the backward op that completed the bucket.
#include "models/parallelism/rules/sharding_rule.hpp"

namespace tpusim {
namespace {

class DataAxis final : public ShardingRule {
 public:
  // Across slices too when each slice holds one replica (multislice, data parallel over the DCN),
  // unless the slices carry the pipeline (parallelism.dcn_pipeline).
  bool live(const Layout& l) const override { return l.replicas() > 1 || l.batch_slices() > 1; }
  bool syncs_gradients() const override { return true; }

  void sync_bucket(PartitionState& s, Bucket& b) override {
    s.emit_bucket_sync(b, CollectiveKind::AllReduce);
  }
};

const ShardingRuleRegistrar kDataAxisRule{"data", 10, [] { return std::make_unique<DataAxis>(); }};

}  // namespace
}  // namespace tpusim
