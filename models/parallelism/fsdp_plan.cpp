#include "models/parallelism/fsdp_plan.hpp"

#include <algorithm>

namespace tpusim {
namespace {

bool only_weight_gradient(const OpGraph& g, int v) {
  if (!g.node(v).weight_grad) return false;
  for (const auto& [reader, slot] : g.consumers(v))
    if (g.node(reader).phase != Phase::Optimizer) return false;
  return true;
}

// The forward op whose weights `v` uses.
int forward_user(const OpGraph& g, int v) {
  const OpNode& n = g.node(v);
  if (n.recompute_of >= 0) return n.recompute_of;
  if (n.phase == Phase::Forward) return v;
  // An added table's gradient is dY itself; a weight gradient reads dY and the inputs.
  if (n.phase == Phase::Backward && n.forward_of >= 0 && !only_weight_gradient(g, v) &&
      g.node(n.forward_of).kind != OpKind::Elementwise)
    return n.forward_of;
  return -1;
}

int owner_read(const OpGraph& g, int v) {
  const int f = forward_user(g, v);
  if (f < 0) return -1;
  const OpNode& fw = g.node(f);
  if (fw.tied_to >= 0) return fw.tied_to;
  return fw.params > 0 ? f : -1;
}

int layer_of(const OpGraph& g, int v) {
  const OpNode& n = g.node(v);
  if (n.layer >= 0) return n.layer;
  return n.phase == Phase::Backward && n.forward_of >= 0 ? g.node(n.forward_of).layer : -1;
}

}  // namespace

FsdpPlan plan_fsdp(const OpGraph& g) {
  FsdpPlan p;
  p.owner_read.assign(g.size(), -1);
  p.segment.assign(g.size(), -1);
  int layer = -2;
  Phase phase = Phase::Other;
  for (int v = 0; v < g.size(); ++v) {
    const OpNode& n = g.node(v);
    if (n.phase == Phase::Optimizer) continue;
    const Phase pass = n.phase == Phase::Forward ? Phase::Forward : Phase::Backward;
    if (layer_of(g, v) != layer || pass != phase) {
      layer = layer_of(g, v);
      phase = pass;
      p.owners_of_segment.emplace_back();
      p.segment_phase.push_back(pass);
    }
    p.segment[v] = static_cast<int>(p.owners_of_segment.size()) - 1;
    p.owner_read[v] = owner_read(g, v);
    auto& owners = p.owners_of_segment.back();
    if (p.owner_read[v] >= 0 &&
        std::find(owners.begin(), owners.end(), p.owner_read[v]) == owners.end())
      owners.push_back(p.owner_read[v]);
  }
  return p;
}

}  // namespace tpusim
