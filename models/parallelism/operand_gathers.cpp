#include "models/parallelism/operand_gathers.hpp"

#include <algorithm>

namespace tpusim {
namespace {

double product_of_degrees(const Layout& l, const std::vector<std::string>& axes) {
  double p = 1;
  for (const auto& a : axes) p *= l.degree(a);
  return p;
}

}  // namespace

std::vector<int> OperandGathers::sources(const OpGraph& g, int v, const OperandGather& gather) {
  if (!gather.from.empty()) return gather.from;
  const auto ins = g.inputs(v);
  if (static_cast<std::size_t>(gather.slot) < ins.size()) return {ins[gather.slot]};
  return ins;
}

int OperandGathers::gather(PartitionState& s, int v, const OperandGather& gather) {
  const OpNode& n = s.graph.node(v);
  if (gather.bytes <= 0 || product_of_degrees(s.layout, gather.axes) <= 1) return -1;
  const std::vector<int> from = sources(s.graph, v, gather);
  std::vector<int> deps;
  for (int u : from)
    if (s.result[u] >= 0) deps.push_back(s.result[u]);
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  const bool forward = gather.keep || n.phase == Phase::Forward;
  const double bytes = gather.bytes / product_of_degrees(s.layout, gather.divisors);
  Key key{forward, deps, bytes, gather.axes, gather.name};
  if (auto it = emitted_.find(key); it != emitted_.end()) return it->second;
  const OpNode& src = s.graph.node(from.front());
  const bool activation = src.phase == Phase::Forward || src.recompute;
  const std::string what = gather.name.empty() ? "input" : gather.name;
  const int op = s.emit_collective(n.name + "." + what + "." + to_string(gather.kind), gather.kind,
                                   n.phase, bytes, gather.dtype, gather.axes, deps);
  s.program.ops[op].output.cls =
      activation ? MemoryClass::Activations : MemoryClass::ActivationGradients;
  emitted_[key] = op;
  return op;
}

}  // namespace tpusim
