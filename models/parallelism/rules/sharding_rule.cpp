#include "models/parallelism/rules/sharding_rule.hpp"

#include <algorithm>
#include <utility>

namespace tpusim {
namespace {

struct Registered {
  int order;
  std::string name;
  ShardingRuleFactory make;
};

std::vector<Registered>& rule_registry() {
  static std::vector<Registered> r;
  return r;
}

// The registered rules sorted by order (static initialisation runs in no fixed order).
std::vector<Registered> in_order() {
  std::vector<Registered> r = rule_registry();
  std::sort(r.begin(), r.end(),
            [](const Registered& a, const Registered& b) { return a.order < b.order; });
  return r;
}

}  // namespace

ShardingRuleRegistrar::ShardingRuleRegistrar(const char* name, int order,
                                             ShardingRuleFactory make) {
  rule_registry().push_back({order, name, std::move(make)});
}

std::vector<std::string> registered_sharding_rules() {
  std::vector<std::string> out;
  for (const auto& r : in_order()) out.push_back(r.name);
  return out;
}

RuleSet::RuleSet(const Layout& l) {
  for (const auto& r : in_order()) {
    auto rule = r.make();
    if (!rule->live(l)) continue;
    if (rule->syncs_gradients()) sync_ = rule.get();
    rules_.push_back({r.name, std::move(rule)});
  }
}

std::vector<std::string> RuleSet::partial_axes(const OpNode& n, const Layout& l) const {
  std::vector<std::string> axes;
  for (const auto& e : rules_)
    if (e.rule->partial(n, l)) axes.push_back(e.name);
  return axes;
}

bool RuleSet::all_scatter(const std::vector<std::string>& names) const {
  for (const auto& name : names)
    for (const auto& e : rules_)
      if (e.name == name && !e.rule->scatters()) return false;
  return true;
}

PartitionState::PartitionState(const OpGraph& g, const Layout& l, const RuleSet& rules)
    : graph(g), layout(l), replica_axes(l.replica_axes()), result(g.size(), -1), rules_(rules) {
  // An op per node and some collectives, per microbatch: fewer regrowths of 456-byte Ops.
  program.ops.reserve(2 * static_cast<std::size_t>(g.size()) *
                      static_cast<std::size_t>(std::max(1, g.microbatches)));
}

int PartitionState::push(Op op) {
  program.ops.push_back(std::move(op));
  return static_cast<int>(program.ops.size()) - 1;
}

int PartitionState::emit_collective(std::string name, CollectiveKind kind, Phase phase,
                                    double bytes, DType dtype, std::vector<std::string> axes,
                                    std::vector<int> deps) {
  Op op;
  op.name = std::move(name);
  op.kind = to_string(kind);
  op.phase = phase;
  op.is_collective = true;
  op.collective.kind = kind;
  op.collective.bytes = bytes;
  op.collective.dtype = dtype;
  op.collective.axes = std::move(axes);
  op.dtype = dtype;
  op.deps = std::move(deps);
  op.output = {bytes, dtype, MemoryClass::CollectiveBuffers, -1};
  return push(std::move(op));
}

int PartitionState::emit_bucket_sync(Bucket& b, CollectiveKind kind) {
  b.collective =
      emit_collective("grad.bucket." + std::to_string(b.index) + "." + to_string(kind), kind,
                      Phase::Backward, b.grad_bytes, layout.grad_dtype, b.axes, b.done_ops);
  program.ops[b.collective].output.cls = MemoryClass::GradientBuckets;
  return b.collective;
}

std::vector<std::string> PartitionState::sync_axes(int owner) const {
  std::vector<std::string> axes = replica_axes;
  for (const auto& e : rules_.rules())
    if (e.rule->owns_weights(graph.node(owner), layout))
      axes.erase(std::remove(axes.begin(), axes.end(), e.name), axes.end());
  return axes;
}

double PartitionState::params_per_core(int owner) const {
  const OpNode& f = graph.node(owner);
  double n = static_cast<double>(f.params);
  for (const auto& e : rules_.rules()) n /= e.rule->weight_divisor(f, layout);
  return n;
}

std::vector<int> PartitionState::owners_of(const OpNode& grad) const {
  std::vector<int> out;
  const OpNode& f = graph.node(grad.forward_of);
  if (f.tied_to >= 0) out.push_back(f.tied_to);
  if (f.params > 0) out.push_back(grad.forward_of);
  return out;
}

}  // namespace tpusim
