#include "sim/collectives/collective_plan.hpp"

#include <algorithm>
#include <array>

#include "sim/machine/machine.hpp"

namespace tpusim {

void Ring::update_path_latency() {
  path_latency = Duration{};
  for (const auto* routes : {&next, &prev}) {
    for (const auto& r : *routes) {
      Duration l;
      for (const NetworkLink* link : r) l += link->latency;
      path_latency = max(path_latency, l);
    }
  }
}

Ring make_ring(const Machine& m, const std::vector<int>& order, bool bidirectional, bool closed) {
  Ring r;
  r.members = order;
  const std::size_t n = order.size();
  r.next.resize(n);
  if (bidirectional) r.prev.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (closed || i + 1 < n) r.next[i] = m.route(order[i], order[(i + 1) % n]);
    if (bidirectional && (closed || i > 0)) r.prev[i] = m.route(order[i], order[(i + n - 1) % n]);
  }
  r.update_path_latency();
  return r;
}

Ring make_exchange(const Machine& m, const std::vector<int>& members,
                   const std::vector<std::vector<int>>& partners) {
  Ring r;
  r.members = members;
  std::vector<std::pair<Route, int>> sends;  // route, sending core
  // The cores of a chip usually send to the cores of the same partner chips: between chips a
  // route depends on the chips alone, so the routes of the last few chip pairs are copied
  // rather than routed again.
  struct Recent {
    int from_chip = -1, to_chip = -1;
    std::size_t send = 0;
  };
  std::array<Recent, 4> recent;
  std::size_t next_recent = 0;
  for (std::size_t i = 0; i < members.size(); ++i)
    for (int j : partners[i]) {
      const int from = members[i], to = members[j];
      if (to == from) continue;
      const int a = m.chip_of(from), b = m.chip_of(to);
      const auto hit = std::find_if(recent.begin(), recent.end(), [&](const Recent& r) {
        return r.from_chip == a && r.to_chip == b;
      });
      if (a != b && hit != recent.end()) {
        sends.emplace_back(sends[hit->send].first, from);
        continue;
      }
      sends.emplace_back(m.route(from, to), from);
      if (a != b) recent[next_recent++ % recent.size()] = {a, b, sends.size() - 1};
    }
  // Shortest routes first: the message level reserves links in batch order, and a long route
  // reserved early would hold its later links until its first hops are through.
  const auto shorter = [](const auto& a, const auto& b) { return a.first.size() < b.first.size(); };
  // Often every route is as long (a swap or shift along one dimension): then nothing moves.
  if (!std::is_sorted(sends.begin(), sends.end(), shorter))
    std::stable_sort(sends.begin(), sends.end(), shorter);
  r.next.reserve(sends.size());
  r.next_from.reserve(sends.size());
  for (auto& [route, from] : sends) {
    r.next.push_back(std::move(route));
    r.next_from.push_back(from);
  }
  r.update_path_latency();
  return r;
}

namespace {
/// The links of one phase's routes as (chip coordinates, place), so that the links of the phase
/// moved by a shift (shifted_plan) are found without building the moved plan: each coordinate
/// moved round its dimension, the chip numbered as Topology numbers it (dimension 0 fastest).
class MovedLinks {
 public:
  explicit MovedLinks(const Machine& m) : m_(m), dims_(m.topology().num_dims()) {}
  void clear() { coords_.clear(), places_.clear(); }
  bool empty() const { return places_.empty(); }
  void add(const PlanPhase& phase) {
    const Topology& topo = m_.topology();
    for (const Ring& ring : phase.rings)
      for (const auto* routes : {&ring.next, &ring.prev})
        for (const Route& route : *routes)
          for (const NetworkLink* link : route) {
            const auto [chip, place] = m_.place_of(*link);
            for (int d = 0; d < dims_; ++d) coords_.push_back(topo.coord(chip, d));
            places_.push_back(place);
          }
  }
  template <class F>
  void for_each_moved(const std::vector<int>& by, F&& f) const {
    const Topology& topo = m_.topology();
    const auto n = static_cast<std::size_t>(dims_);
    std::vector<int> moved(n), size(n), stride(n);
    for (std::size_t d = 0, st = 1; d < n; ++d) {
      size[d] = topo.dim(static_cast<int>(d));
      moved[d] = ((by[d] % size[d]) + size[d]) % size[d];
      stride[d] = static_cast<int>(st);
      st *= static_cast<std::size_t>(size[d]);
    }
    for (std::size_t e = 0; e < places_.size(); ++e) {
      int chip = 0;
      for (std::size_t d = 0; d < n; ++d) {
        int c = coords_[e * n + d] + moved[d];
        if (c >= size[d]) c -= size[d];
        chip += c * stride[d];
      }
      f(m_.link_index_at(chip, places_[e]));
    }
  }

 private:
  const Machine& m_;
  int dims_;
  std::vector<int> coords_, places_;
};
}  // namespace

void profile_plans(const Machine& m, const std::vector<GroupPlan*>& plans,
                   std::vector<double>& scratch, const std::vector<std::vector<int>>* moved) {
  if (scratch.size() < m.links().size()) scratch.assign(m.links().size(), 0.0);
  std::vector<const NetworkLink*> touched;
  std::size_t phases = 0;
  for (const GroupPlan* plan : plans) phases = std::max(phases, plan->phases.size());
  const auto count_index = [&](int index) {
    if (scratch[static_cast<std::size_t>(index)] == 0)
      touched.push_back(m.links()[static_cast<std::size_t>(index)]);
    scratch[static_cast<std::size_t>(index)] += 1;
  };
  const auto count = [&](const NetworkLink* link) { count_index(link->index); };
  MovedLinks origin(m);
  for (std::size_t k = 0; k < phases; ++k) {
    origin.clear();
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const GroupPlan* plan = plans[i];
      if (k >= plan->phases.size()) continue;
      if (moved && !(*moved)[i].empty()) {
        if (origin.empty()) origin.add(plan->phases[k]);
        origin.for_each_moved((*moved)[i], count_index);
        continue;
      }
      for (const Ring& ring : plan->phases[k].rings)
        for (const auto* routes : {&ring.next, &ring.prev})
          for (const Route& route : *routes)
            for (const NetworkLink* link : route) count(link);
    }
    double worst = 0;
    for (const NetworkLink* link : touched) {
      worst = std::max(worst, scratch[link->index] / link->bandwidth.bytes_per_s());
      scratch[link->index] = 0;
    }
    touched.clear();
    for (GroupPlan* plan : plans) {
      if (k >= plan->phases.size()) continue;
      PlanPhase& phase = plan->phases[k];
      phase.link_s_per_byte = worst;
      phase.path_latency = Duration{};
      for (const Ring& ring : phase.rings)
        phase.path_latency = max(phase.path_latency, ring.path_latency);
    }
  }
}

bool chip_shift(const Machine& m, const std::vector<int>& from, const std::vector<int>& to,
                std::vector<int>& by) {
  if (!m.routes_translate() || from.size() != to.size() || from.empty()) return false;
  const Topology& topo = m.topology();
  const int dims = topo.num_dims();
  by.assign(static_cast<std::size_t>(dims), 0);
  for (int d = 0; d < dims; ++d)
    by[d] = topo.coord(m.chip_of(to[0]), d) - topo.coord(m.chip_of(from[0]), d);
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (m.core_in_chip(from[i]) != m.core_in_chip(to[i])) return false;
    for (int d = 0; d < dims; ++d)
      if (topo.coord(m.chip_of(to[i]), d) != topo.coord(m.chip_of(from[i]), d) + by[d])
        return false;
  }
  return true;
}

GroupPlan shifted_plan(const Machine& m, const GroupPlan& plan, const std::vector<int>& by) {
  const int cpc = m.hardware().devices_per_chip;
  auto core = [&](int c) {
    return m.topology().shifted(m.chip_of(c), by) * cpc + m.core_in_chip(c);
  };
  auto routes = [&](const std::vector<Route>& from, std::vector<Route>& to) {
    to.resize(from.size());
    for (std::size_t k = 0; k < from.size(); ++k) {
      to[k].reserve(from[k].size());
      for (const NetworkLink* l : from[k]) to[k].push_back(m.shifted_link(*l, by));
    }
  };
  GroupPlan out;
  out.phases.reserve(plan.phases.size());
  for (const PlanPhase& p : plan.phases) {
    out.phases.push_back(p.without_rings());
    auto& rings = out.phases.back().rings;
    rings.resize(p.rings.size());
    for (std::size_t r = 0; r < p.rings.size(); ++r) {
      const Ring& from = p.rings[r];
      Ring& to = rings[r];
      to.members.reserve(from.members.size());
      for (int c : from.members) to.members.push_back(core(c));
      for (int c : from.next_from) to.next_from.push_back(core(c));
      routes(from.next, to.next);
      routes(from.prev, to.prev);
      to.path_latency = from.path_latency;
      to.represented_routes = from.represented_routes;
      to.represented_members = from.represented_members;
    }
  }
  return out;
}

GroupPlan ring_phases(const Machine& m, CollectiveKind kind, const std::vector<DimRings>& dims,
                      bool routed) {
  auto phase_for = [&](const DimRings& d, StepKind k, double fraction) {
    PlanPhase p;
    p.kind = k;
    p.bidirectional = d.bidirectional;
    p.steps = static_cast<int>(d.rings.front().size()) - 1;
    p.step_fraction = fraction;
    if (!routed) {
      p.link_s_per_byte = d.link_s_per_byte;
      p.path_latency = d.path_latency;
      return p;
    }
    for (const auto& order : d.rings) p.rings.push_back(make_ring(m, order, d.bidirectional));
    return p;
  };
  GroupPlan plan;
  double f = 1.0;  // the share of the collective's bytes each member holds
  std::vector<double> before;
  for (const auto& d : dims) {
    const double n = static_cast<double>(d.rings.front().size());
    before.push_back(f);
    if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter)
      plan.phases.push_back(phase_for(d, StepKind::ReduceScatter, f / n));
    f /= n;
  }
  if (kind == CollectiveKind::ReduceScatter) return plan;
  // All-gather back, last dimension first: each step forwards one piece of the current size.
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    const double n = static_cast<double>(dims[i].rings.front().size());
    plan.phases.push_back(phase_for(dims[i], StepKind::AllGather, f));
    f *= n;
  }
  return plan;
}

LinkFloor link_floor(const HardwareSpec& hw, bool offchip, double sharing) {
  // Degraded links are slower (factor at most 1), never faster; the on-chip path of a chip of
  // one device does not exist, so its steps all leave the chip.
  const bool ici = offchip || hw.devices_per_chip < 2;
  const Bandwidth bw = ici ? hw.ici_bandwidth : hw.onchip_bandwidth;
  return {sharing / bw.bytes_per_s(), ici ? hw.ici_latency : hw.onchip_latency};
}

LinkFloor any_link_floor(const HardwareSpec& hw) {
  const LinkFloor a = link_floor(hw, true), b = link_floor(hw, false);
  return {std::min(a.s_per_byte, b.s_per_byte), min(a.latency, b.latency)};
}

}  // namespace tpusim
