// The model2 axis (2D weight-stationary sharding, parallelism.model2; GSPMD, PaLM; docs/llm.md):
// weight matrices split on d_model over "model2" (on d_ff or heads over "model"), as decoder_lm
// annotates (OpSplit::model2). Ops contracting over d_model hold partial sums over the axis,
// reduce-scattered where their readers take them sharded; the activations' all-gathers over it
// are the builder's OperandGathers. Weights marked params_split_by_model2 are divided over it.
#include "models/parallelism/rules/sharding_rule.hpp"

namespace tpusim {
namespace {

class Model2Axis final : public ShardingRule {
 public:
  bool live(const Layout& l) const override { return l.model2 > 1; }
  bool partial(const OpNode& n, const Layout& l) const override {
    return n.split.model2 == SplitDim::K;
  }
  bool scatters() const override { return true; }
  double weight_divisor(const OpNode& owner, const Layout& l) const override {
    return owner.params_split_by_model2 ? l.model2 : 1;
  }
  void optimizer_shard_axes(const OpNode& owner, const Layout& l,
                            std::vector<std::string>& axes) const override {
    if (owner.params_split_by_model2) axes.push_back("model2");
  }
};

const ShardingRuleRegistrar kModel2AxisRule{"model2", 70,
                                            [] { return std::make_unique<Model2Axis>(); }};

}  // namespace
}  // namespace tpusim
