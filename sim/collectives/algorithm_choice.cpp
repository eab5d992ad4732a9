// Algorithm choice: the configured algorithm, or under `auto` the candidate whose plans the
// cost model predicts fastest (the slowest group counts), skipping candidates whose lower bound
// cannot beat the best so far.
#include <algorithm>

#include "sim/collectives/collective_planner.hpp"

namespace tpusim {
namespace {
/// Groups up to this size try the direct all-to-all under auto: its plan holds n (n-1) routes.
constexpr std::size_t kAutoDirectAllToAllMembers = 512;
/// Under auto, ties go to the earlier name (the algorithms used before auto compared times).
const std::vector<std::string> kPreference = {"per_dimension", "bidirectional_ring", "ring"};
}  // namespace

std::vector<std::string> CollectivePlanner::candidates(const CollectiveSpec& spec,
                                                       std::size_t group_size) const {
  std::vector<std::string> out;
  if (spec.kind == CollectiveKind::AllToAll) {
    for (const auto& name : all_to_all_names())
      if (name != "direct" || group_size <= kAutoDirectAllToAllMembers) out.push_back(name);
  } else if (spec.kind != CollectiveKind::CollectivePermute) {
    out = kPreference;
    for (const auto& name : algorithm_names())
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
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
    Duration best;
    for (const auto& name : names) {
      if (plans && spec.kind != CollectiveKind::AllToAll &&
          algorithm(name).lower_bound(machine_, spec.kind, first, spec.bytes) >= best)
        continue;
      const auto* ps = cached_plans(spec, gs, name, true);
      if (!ps) continue;
      const auto key =
          std::make_tuple(static_cast<const void*>(ps), spec.bytes, static_cast<int>(spec.dtype));
      auto known = predicted_.find(key);
      if (known == predicted_.end())
        known = predicted_.emplace(key, model_.predicted_time(*ps, spec.bytes, spec.dtype)).first;
      const Duration t = known->second;
      if (!plans || t < best) {
        plans = ps;
        best = t;
        chosen = name;
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
