// The fsdp axis (fully sharded data parallelism, parallelism.fsdp; docs/llm.md): the weights, the
// gradients and the optimizer state are sharded over "fsdp". At the start of each program
// segment (models/parallelism/fsdp_plan.hpp) the weights it reads, and the next segment's, are
// all-gathered in one collective each (one segment ahead, so that they overlap compute where
// collectives are asynchronous; as XLA's all-gather combiner merges a layer's gathers). Every
// microbatch reduce-scatters its gradients over "fsdp" (a core accumulates only its shard); after
// the last one the shards' sum is all-reduced over the other replica axes (with slices, over
// "data" across them: the hierarchical reduction of a hybrid mesh, reduce-scatter on ICI, the
// shard all-reduced over the data-center network; no all-gather, the weights stay sharded).
// Within a pipeline stage (docs/pipeline.md) the same happens per unit: each unit gathers its
// chunk's weights and reduce-scatters their gradients, as MaxText's pipeline does per iteration.
// With parallelism.dcn_fsdp the slices carry fsdp too (MaxText's dcn_fsdp_parallelism, a hybrid
// mesh of dcn_data x dcn_fsdp slices): every shard is 1/(fsdp x dcn_fsdp) of the weights, each
// all-gather also spans the dcn_fsdp slices of a group (over the DCN first, then ICI) and each
// reduce-scatter too (ICI first, then the DCN): the collective planner spans them with every
// all-gather and reduce-scatter over "fsdp" (CollectiveOptions::dcn_fsdp). The shard's sum is
// then all-reduced over "data" among the dcn_data slices that hold the same shard (none when
// dcn_fsdp is all the slices).
#include <map>
#include <utility>

#include "models/parallelism/fsdp_plan.hpp"
#include "models/parallelism/rules/sharding_rule.hpp"

namespace tpusim {
namespace {

class FsdpAxis final : public ShardingRule {
 public:
  bool live(const Layout& l) const override { return l.fsdp > 1; }
  void start(PartitionState& s) override { plan_ = plan_fsdp(s.graph); }

  void begin_microbatch(PartitionState& s) override {
    segment_ = -1;
    gathered_.clear();
  }

  void before_op(PartitionState& s, int v, std::vector<int>& deps,
                 std::vector<int>& reads) override {
    const int seg = plan_.segment[v];
    if (seg != segment_) {
      segment_ = seg;
      emit_gathers(s, seg);
      emit_gathers(s, seg + 1);
    }
    const int owner = plan_.owner_read[v];
    if (owner < 0) return;
    const int gather = gathered_.at({owner, seg});
    deps.push_back(gather);
    reads.push_back(gather);
  }

  double weight_copy_divisor(const Layout& l) const override { return l.fsdp_shards(); }
  double optimizer_divisor(const Layout& l) const override { return l.fsdp_shards(); }
  void optimizer_shard_axes(const OpNode& owner, const Layout& l,
                            std::vector<std::string>& axes) const override {
    axes.push_back("fsdp");
  }

  bool syncs_gradients() const override { return true; }
  bool sync_each_microbatch() const override { return true; }

  // The bucket's gradients reduce-scattered over "fsdp" (each core keeps the sum of its shard),
  // then that shard all-reduced over the other replica axes.
  void sync_bucket(PartitionState& s, Bucket& b) override {
    const Layout& l = s.layout;
    const std::string name = "grad.bucket." + std::to_string(b.index);
    b.collective =
        s.emit_collective(name + ".reduce-scatter", CollectiveKind::ReduceScatter, Phase::Backward,
                          b.grad_bytes, l.grad_dtype, {"fsdp"}, b.done_ops);
    s.program.ops[b.collective].output = {b.grad_bytes / l.fsdp_shards(), l.grad_dtype,
                                          MemoryClass::GradientBuckets, -1};
    std::vector<std::string> others;
    // Multislice: "data" spans the slices that carry data even when each slice holds one data
    // replica (fsdp over the whole slice), so the shard's sum crosses the data-center network;
    // not when the slices carry only fsdp or the pipeline (then "data" is inside each slice).
    for (const auto& a : b.axes)
      if (a != "fsdp" && (l.degree(a) > 1 || (a == "data" && l.dcn_data_slices() > 1)))
        others.push_back(a);
    if (others.empty() || !s.last_microbatch) return;  // the shards' sum is all-reduced once
    const int rs = b.collective;
    b.collective =
        s.emit_collective(name + ".all-reduce", CollectiveKind::AllReduce, Phase::Backward,
                          b.grad_bytes / l.fsdp_shards(), l.grad_dtype, others, {rs});
    s.program.ops[b.collective].output.cls = MemoryClass::GradientBuckets;
    s.program.ops[rs].output.last_use = b.collective;
  }

 private:
  // One all-gather per segment for all the weights it reads (those of its stage, with a
  // pipeline: a segment of another stage's layers is not gathered).
  void emit_gathers(PartitionState& s, int seg) {
    if (seg >= static_cast<int>(plan_.owners_of_segment.size())) return;
    std::vector<int> owners;
    for (int o : plan_.owners_of_segment[seg])
      if (s.off_stage.empty() || !s.off_stage[o]) owners.push_back(o);
    if (owners.empty() || gathered_.count({owners.front(), seg})) return;
    const Phase phase = plan_.segment_phase[seg];
    // Quantized owners' weights travel in their 8-bit dtype (workload.quantization).
    double bytes = 0;
    for (int owner : owners)
      bytes += s.params_per_core(owner) * s.graph.node(owner).weight_copy_bytes();
    const std::string what = phase == Phase::Forward ? ".weights" : ".weights.bwd";
    const int op =
        s.emit_collective(s.graph.node(owners.front()).name + what + ".all-gather",
                          CollectiveKind::AllGather, phase, bytes, DType::BF16, {"fsdp"}, {});
    s.program.ops[op].output.cls = MemoryClass::WeightCopies;
    for (int owner : owners) gathered_[{owner, seg}] = op;
  }

  FsdpPlan plan_;
  int segment_ = -1;                             ///< segment of the op being emitted
  std::map<std::pair<int, int>, int> gathered_;  ///< (owner, segment) -> its all-gather op
};

const ShardingRuleRegistrar kFsdpAxisRule{"fsdp", 30, [] { return std::make_unique<FsdpAxis>(); }};

}  // namespace
}  // namespace tpusim
