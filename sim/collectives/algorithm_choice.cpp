// Algorithm choice: the configured algorithm, or under `auto` the candidate whose plans the
// cost model predicts fastest (the slowest group counts). Candidates are tried in the order of
// their bounds (the predicted time of their bound plans, which route nothing), and no plan is
// built for a candidate whose bound cannot beat the best so far.
#include <algorithm>
#include <cstdio>

#include "sim/collectives/collective_planner.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {

std::vector<int> hops_along(const Machine& m, const std::vector<const GroupPlan*>& plans) {
  const int dims = m.topology().num_dims();
  std::vector<int> most(static_cast<std::size_t>(dims), 0), along(most.size());
  // A moved group's shape is the first group's plan (CollectivePlanner::shapes): each distinct
  // plan once.
  std::vector<const GroupPlan*> distinct(plans);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (const GroupPlan* plan : distinct)
    if (plan)
      for (const PlanPhase& ph : plan->phases)
        for (const Ring& r : ph.rings)
          for (const auto* routes : {&r.next, &r.prev})
            for (const Route& route : *routes) {
              std::fill(along.begin(), along.end(), 0);
              for (const NetworkLink* l : route) {
                const auto [chip, place] = m.place_of(*l);
                if (chip >= 0 && place < 2 * dims) ++along[static_cast<std::size_t>(place / 2)];
              }
              for (std::size_t d = 0; d < most.size(); ++d) most[d] = std::max(most[d], along[d]);
            }
  return most;
}

namespace {
/// Under auto, ties go to the earlier name (the algorithms used before auto compared times).
const std::vector<std::string> kPreference = {"per_dimension", "bidirectional_ring", "ring"};

/// Hops past `others` summed over the dimensions: how far `mine` would stretch the domain.
int excess(const std::vector<int>& mine, const std::vector<int>& others) {
  int e = 0;
  for (std::size_t d = 0; d < mine.size(); ++d) e += std::max(0, mine[d] - others[d]);
  return e;
}

/// One core's compute ops in a row: a lower bound of the step, in seconds.
double compute_seconds(const Program& program, const HardwareSpec& hw) {
  double s = 0;
  for (const Op& op : program.ops)
    if (!op.is_collective)
      s += op.compute.measured_ns ? *op.compute.measured_ns * 1e-9
                                  : compute_op_time(hw, op.compute).total.seconds();
  return s;
}

/// The distinct plan sets of the ops in program order, each set's ops and how far its routes
/// reach along each dimension.
using Plans = std::vector<const GroupPlan*>;
struct PlanSets {
  std::vector<const Plans*> sets;
  std::vector<std::vector<int>> ops_of, hops;
};
PlanSets plan_sets(const std::vector<const Plans*>& op_plans, const Machine& m) {
  PlanSets out;
  for (std::size_t i = 0; i < op_plans.size(); ++i) {
    if (!op_plans[i]) continue;
    const auto at = static_cast<std::size_t>(
        std::find(out.sets.begin(), out.sets.end(), op_plans[i]) - out.sets.begin());
    if (at == out.sets.size()) {
      out.sets.push_back(op_plans[i]);
      out.ops_of.emplace_back();
      out.hops.push_back(hops_along(m, *op_plans[i]));
    }
    out.ops_of[at].push_back(static_cast<int>(i));
  }
  return out;
}

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g ms", ms);
  return buf;
}
}  // namespace

std::vector<std::string> CollectivePlanner::candidates(const CollectiveSpec& spec,
                                                       std::size_t group_size) const {
  std::vector<std::string> out;
  if (spec.kind == CollectiveKind::AllToAll) {
    for (const auto& name : all_to_all_names())
      if (group_size <= make_all_to_all(name)->auto_max_members()) out.push_back(name);
  } else if (spec.kind != CollectiveKind::CollectivePermute) {
    out = kPreference;
    for (const auto& name : algorithm_names())
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

template <class Plans>
Duration CollectivePlanner::predicted(const Plans& plans, const CollectiveSpec& spec) {
  const auto key =
      std::make_tuple(static_cast<const void*>(&plans), spec.bytes, static_cast<int>(spec.dtype));
  auto known = predicted_.find(key);
  if (known == predicted_.end())
    known = predicted_.emplace(key, model_.predicted_time(plans, spec.bytes, spec.dtype)).first;
  return known->second;
}

Duration CollectivePlanner::expected_time(int op_index) const {
  const CollectiveSpec& spec = program_.ops[static_cast<std::size_t>(op_index)].collective;
  return model_.predicted_time(shapes(op_index), spec.bytes, spec.dtype);
}

const std::vector<const GroupPlan*>& CollectivePlanner::choose(const CollectiveSpec& spec,
                                                               const GroupSet& gs,
                                                               CollectiveOpStats& st) {
  const auto& first = gs.groups.front();
  std::string configured = "direct";
  if (spec.kind == CollectiveKind::AllToAll)
    configured = options_.all_to_all_algorithm;
  else if (spec.kind != CollectiveKind::CollectivePermute)
    configured = options_.algorithm;
  const std::vector<std::string> names = candidates(spec, first.size());
  std::string chosen = configured;
  const std::vector<const GroupPlan*>* plans = nullptr;
  if (configured == "auto") {
    // Candidates in the order of their bounds (ties: preference); each bound is at most the
    // candidate's predicted time, so once a bound cannot beat the best (or tie it from a later
    // place in the preference), neither can any candidate after it, and their plans are never
    // built. All-to-all plans have no bound: each is built, in preference order.
    struct Candidate {
      Duration bound;
      std::size_t rank;
    };
    std::vector<Candidate> order;
    for (std::size_t rank = 0; rank < names.size(); ++rank) {
      Duration bound;
      if (spec.kind != CollectiveKind::AllToAll) {
        const GroupPlan* b = cached_bound(spec, gs, names[rank]);
        if (!b) continue;  // the algorithm cannot serve the group
        bound = predicted(*b, spec);
      }
      order.push_back({bound, rank});
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const Candidate& a, const Candidate& b) { return a.bound < b.bound; });
    Duration best;
    std::size_t best_rank = 0;
    for (const Candidate& c : order) {
      if (plans && (c.bound > best || (c.bound == best && c.rank > best_rank))) break;
      const auto* ps = cached_plans(spec, gs, names[c.rank], true);
      if (!ps) continue;
      const Duration t = predicted(*ps, spec);
      if (!plans || t < best || (t == best && c.rank < best_rank)) {
        plans = ps;
        best = t;
        best_rank = c.rank;
        chosen = names[c.rank];
      }
    }
    // None served: all-to-all falls back to direct (large non-grid groups); otherwise the first
    // candidate is built again to report why (e.g. failed links cut a group off).
    if (!plans)
      plans = cached_plans(
          spec, gs, chosen = spec.kind == CollectiveKind::AllToAll ? "direct" : names.front(),
          false);
  } else {
    plans = cached_plans(spec, gs, chosen, false);
  }
  st.algorithm = chosen;
  int steps = 0;
  for (const auto& p : plans->front()->phases) steps += p.steps;
  st.steps = steps;
  return *plans;
}

void CollectivePlanner::keep_routes_short(std::map<int, CollectiveOpStats>& stats) {
  if (options_.auto_resolution <= 0) return;
  const Duration allowed =
      Duration::seconds(options_.auto_resolution * compute_seconds(program_, machine_.hardware()));
  Duration given_up;
  PlanSets ps = plan_sets(op_plans_, machine_);
  // Plain references, not a structured binding: clang 14 (the sanitizer build) refuses a lambda
  // that captures one.
  auto& sets = ps.sets;
  auto& ops_of = ps.ops_of;
  auto& hops = ps.hops;
  for (std::size_t k = 0; k < sets.size(); ++k) {
    std::vector<int> others(hops[k].size(), 1);  // one hop reaches a neighbour: any period
    for (std::size_t j = 0; j < sets.size(); ++j)
      if (j != k)
        for (std::size_t d = 0; d < others.size(); ++d) others[d] = std::max(others[d], hops[j][d]);
    const int now = excess(hops[k], others);
    const CollectiveSpec& spec =
        program_.ops[static_cast<std::size_t>(ops_of[k].front())].collective;
    const bool automatic = spec.kind == CollectiveKind::AllToAll
                               ? options_.all_to_all_algorithm == "auto"
                               : options_.algorithm == "auto";
    if (now == 0 || !automatic || spans_slices(spec)) continue;
    const GroupSet& gs = *op_groups_[static_cast<std::size_t>(ops_of[k].front())];
    const auto cost = [&](const Plans& alt) {  // over every op of the set
      Duration more;
      for (int op : ops_of[k]) {
        const CollectiveSpec& s = program_.ops[static_cast<std::size_t>(op)].collective;
        more += predicted(alt, s) - predicted(*sets[k], s);
      }
      return more;
    };
    const Plans* best = nullptr;
    std::string best_name;
    int best_excess = now;
    Duration best_cost;
    for (const std::string& name : candidates(spec, gs.groups.front().size())) {
      if (spec.kind != CollectiveKind::AllToAll) {  // no plan built past the bound
        const GroupPlan* b = cached_bound(spec, gs, name);
        if (!b) continue;
        Duration least;
        for (int op : ops_of[k]) {
          const CollectiveSpec& s = program_.ops[static_cast<std::size_t>(op)].collective;
          least += predicted(*b, s) - predicted(*sets[k], s);
        }
        if (given_up + least > allowed) continue;
      }
      const Plans* alt = cached_plans(spec, gs, name, true);
      if (!alt || alt == sets[k]) continue;
      const Duration more = cost(*alt);
      if (given_up + more > allowed) continue;
      const int e = excess(hops_along(machine_, *alt), others);
      if (e < best_excess || (best && e == best_excess && more < best_cost)) {
        best = alt, best_name = name, best_excess = e, best_cost = more;
      }
    }
    if (!best) continue;
    given_up += best_cost;
    const std::string was = stats[ops_of[k].front()].algorithm;
    for (int op : ops_of[k]) {
      op_plans_[static_cast<std::size_t>(op)] = best;
      CollectiveOpStats& st = stats[op];
      st.algorithm = best_name;
      st.steps = 0;
      for (const auto& p : best->front()->phases) st.steps += p.steps;
      st.note = best_name + ", not " + was;
    }
    notes_.push_back(std::string(to_string(spec.kind)) + " of " + format_bytes(spec.bytes) +
                     " over " + std::to_string(gs.groups.front().size()) + " cores (" +
                     std::to_string(ops_of[k].size()) + (ops_of[k].size() == 1 ? " op" : " ops") +
                     "): " + best_name + ", not " + was + ", whose routes alone would enlarge " +
                     "the symmetric domain; " + ms_text(best_cost.ms()) +
                     " slower as the cost model predicts, within collectives.auto_resolution (" +
                     ms_text(allowed.ms()) + " of compute)");
    hops[k] = hops_along(machine_, *best);
  }
}

}  // namespace tpusim
