// Algorithm choice: the configured algorithm, or under `auto` the candidate whose plans the
// cost model predicts fastest (the slowest group counts). Candidates are tried in the order of
// their bounds (the predicted time of their bound plans, which route nothing), and no plan is
// built for a candidate whose bound cannot beat the best so far.
#include <algorithm>

#include "sim/collectives/collective_planner.hpp"

namespace tpusim {
namespace {
/// Under auto, ties go to the earlier name (the algorithms used before auto compared times).
const std::vector<std::string> kPreference = {"per_dimension", "bidirectional_ring", "ring"};
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
  return model_.predicted_time(plans(op_index), spec.bytes, spec.dtype);
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

}  // namespace tpusim
