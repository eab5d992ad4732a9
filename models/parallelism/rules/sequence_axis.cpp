// The sequence axis (parallelism.sequence, decoder_lm; docs/llm.md): activations split along the
// sequence (OpSplit::sequence). Attention needs the keys and values of the whole sequence: the
// builder marks their all-gathers (OperandGather, kept for the backward pass) or the all-to-all
// reshardings to heads (parallelism.sequence_attention); ops reducing over the tokens hold
// partial sums over the axis (reduce-scattered where their readers take them sharded: dK, dV).
// The weights are replicated over the axis and their gradients summed over it, as over "data".
#include "models/parallelism/rules/sharding_rule.hpp"

namespace tpusim {
namespace {

class SequenceAxis final : public ShardingRule {
 public:
  bool live(const Layout& l) const override { return l.sequence > 1; }
  bool partial(const OpNode& n, const Layout& l) const override {
    return n.split.sequence == SplitDim::K;
  }
  bool scatters() const override { return true; }
};

const ShardingRuleRegistrar kSequenceAxisRule{"sequence", 80,
                                              [] { return std::make_unique<SequenceAxis>(); }};

}  // namespace
}  // namespace tpusim
