// The model axis (Megatron-style model parallelism, parallelism.model; docs/workloads.md): each
// layer's heads, MLP columns and rows and the vocabulary are split over "model" as the builders
// annotate (OpSplit::model). An op splitting a reduced dimension (SplitDim::K: a row-split
// matmul, the vocabulary-split embedding and loss) holds a partial sum over the axis, which may
// be reduce-scattered where its readers take it sharded. Weights marked params_split_by_model are
// divided over the axis (and so are the optimizer's shards of them). A vector op owning weights
// (a layer norm's scale) whose rows are split over "model" holds partial sums of its weight
// gradients: they are all-reduced over "model" (f32) before the gradient sync.
#include "models/parallelism/rules/sharding_rule.hpp"

namespace tpusim {
namespace {

class ModelAxis final : public ShardingRule {
 public:
  bool live(const Layout& l) const override { return l.model > 1; }
  bool partial(const OpNode& n, const Layout& l) const override {
    return n.split.model == SplitDim::K;
  }
  bool scatters() const override { return true; }

  int complete_weight_gradient(PartitionState& s, int v, int op, int done) override {
    const OpNode& n = s.graph.node(v);
    if (n.matmul || n.split.model != SplitDim::M) return done;
    double bytes = 0;
    for (int o : s.owners_of(n))
      if (!s.graph.node(o).params_split_by_model)
        bytes += s.params_per_core(o) * dtype_bytes(DType::F32);
    if (bytes <= 0) return done;
    const int sum = s.emit_collective(n.name + ".params.all-reduce", CollectiveKind::AllReduce,
                                      n.phase, bytes, DType::F32, {"model"}, {op});
    s.program.ops[sum].output.cls = MemoryClass::WeightGradients;
    return sum;
  }

  double weight_divisor(const OpNode& owner, const Layout& l) const override {
    return owner.params_split_by_model ? l.model : 1;
  }
  void optimizer_shard_axes(const OpNode& owner, const Layout& l,
                            std::vector<std::string>& axes) const override {
    if (owner.params_split_by_model) axes.push_back("model");
  }
};

const ShardingRuleRegistrar kModelAxisRule{"model", 60,
                                           [] { return std::make_unique<ModelAxis>(); }};

}  // namespace
}  // namespace tpusim
