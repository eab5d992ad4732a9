// The sequence axis (parallelism.sequence, decoder_lm; docs/llm.md): activations split along the
// sequence (OpSplit::sequence). Attention needs the keys and values of the whole sequence: the
// builder marks their all-gathers (OperandGather, kept for the backward pass) or the all-to-all
// reshardings to heads (parallelism.sequence_attention); ops reducing over the tokens hold
// partial sums over the axis (reduce-scattered where their readers take them sharded: dK, dV,
// also of flash attention's backward).
// The weights are replicated over the axis and their gradients summed over it, as over "data".
#include "models/parallelism/rules/sharding_rule.hpp"

namespace tpusim {
namespace {

class SequenceAxis final : public ShardingRule {
 public:
  bool live(const Layout& l) const override { return l.sequence > 1; }
  bool partial(const OpNode& n, const Layout& l) const override {
    // Flash attention's backward with K and V gathered over the axis: its work is split by blocks
    // (SplitDim::Batch), but dK and dV (scatter_bytes) sum every core's queries (training.cpp).
    return n.split.sequence == SplitDim::K || (n.flash_attention && n.scatter_bytes > 0);
  }
  bool scatters() const override { return true; }
};

const ShardingRuleRegistrar kSequenceAxisRule{"sequence", 80,
                                              [] { return std::make_unique<SequenceAxis>(); }};

}  // namespace
}  // namespace tpusim
