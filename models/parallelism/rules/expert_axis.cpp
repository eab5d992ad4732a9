// The expert axis (parallelism.expert, decoder_lm's mixture-of-experts layers; docs/experts.md):
// a data-like axis (each member runs other sequences, the weights outside the experts replicated
// over it and their gradients summed over it) that divides the routed experts: each member holds
// experts / expert of them, their weights, gradients and optimizer state, and their gradients
// are summed over the other replica axes only (in buckets of their own). The tokens travel to
// their experts' devices and back by the all-to-alls the builder marks (moe_blocks.cpp, over
// "expert"; the partitioner plays them as the collective engine's all-to-all).
#include "models/parallelism/rules/expert_axis.hpp"

#include <string>

#include "core/errors.hpp"
#include "core/param_handle.hpp"
#include "models/op_graph.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/rules/axis_registry.hpp"
#include "models/parallelism/rules/sharding_rule.hpp"

namespace tpusim {
// Read elsewhere through its handle (expert_axis.hpp).
// clang-format off
const Param<std::int64_t> kParallelismExpert{{"parallelism.expert", ParamType::Integer, "cores", 1, "expert parallelism (MaxText ici_expert_parallelism): a data-like mesh axis inside 'fsdp' over which the routed experts of the mixture-of-experts layers are divided (workload.experts must divide by it); tokens reach their experts by an all-to-all and come back by another, forward and backward", 1, 1 << 20}};
// clang-format on

namespace {

const Param<std::int64_t>& kExpert = kParallelismExpert;

int expert_degree(const Layout& l) { return l.registered_degree("expert"); }

// The experts must divide over the axis, and there must be experts to divide.
void check_expert(const OpGraph& g, const Layout& l, ProblemList& problems) {
  const int e = expert_degree(l);
  std::int64_t experts = 0;
  for (int v = 0; v < g.size() && experts == 0; ++v)
    if (g.node(v).expert_weights && g.node(v).matmul) experts = g.node(v).matmul->batch;
  const std::string what = std::to_string(e);
  if (experts == 0)
    return problems.add(kExpert.path(), what + ": " + g.model +
                                            " has no mixture-of-experts layers (workload.experts "
                                            "= 0); allowed: 1");
  if (experts % e != 0)
    problems.add(kExpert.path(), what + " does not divide the " + std::to_string(experts) +
                                     " experts of workload.experts; allowed: a divisor of " +
                                     std::to_string(experts));
}

class ExpertAxis final : public ShardingRule {
 public:
  bool live(const Layout& l) const override { return expert_degree(l) > 1; }
  double weight_divisor(const OpNode& owner, const Layout& l) const override {
    return owner.expert_weights ? expert_degree(l) : 1;
  }
  // Each member holds its own experts: their gradients are summed over the other replica axes.
  bool owns_weights(const OpNode& owner, const Layout& l) const override {
    return owner.expert_weights;
  }
};

const AxisRegistrar kExpertAxis{
    {"expert", &kExpert, kPlaceFsdp + 50, true, true, nullptr, &check_expert}};
const ShardingRuleRegistrar kExpertAxisRule{"expert", 85,
                                            [] { return std::make_unique<ExpertAxis>(); }};

}  // namespace
}  // namespace tpusim
