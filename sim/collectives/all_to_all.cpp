// All-to-all as concurrent exchanges: every member's buffer is cut into one piece per member,
// and the pieces travel at once, routed in dimension order, so they contend for links. On a
// ring of n chips the busiest link then carries (S/n) x (1 + 2 + ... + n/2) bytes, against the
// bisection bound n S / 8 per direction (see docs/network.md).
#include "core/errors.hpp"
#include "core/limits.hpp"
#include "sim/collectives/collective_algorithm.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {
namespace {

/// One ring-shaped exchange among `members`: each sends a piece to every other member.
Ring all_pairs(const Machine& m, const std::vector<int>& members) {
  const std::size_t n = members.size();
  const double transfers = static_cast<double>(n) * static_cast<double>(n - 1);
  if (transfers > static_cast<double>(kMaxCollectiveTransfers))
    throw ConfigError(
        "all-to-all",
        "over " + std::to_string(n) + " cores it is " +
            std::to_string(static_cast<std::int64_t>(transfers)) + " point-to-point transfers, " +
            past_limit(static_cast<double>(kMaxCollectiveTransfers), "transfers",
                       "kMaxCollectiveTransfers") +
            "; use collectives.all_to_all_algorithm=per_dimension or a smaller group");
  std::vector<std::vector<int>> partners(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 1; j < n; ++j) partners[i].push_back(static_cast<int>((i + j) % n));
  return make_exchange(m, members, partners);
}

PlanPhase exchange_phase(double fraction) {
  PlanPhase p;
  p.kind = StepKind::Exchange;
  p.steps = 1;
  p.step_fraction = fraction;
  return p;
}

}  // namespace

std::vector<std::string> all_to_all_names() { return {"direct", "per_dimension"}; }

double all_to_all_transfers(const Machine& m, const std::vector<int>& group,
                            const std::string& algorithm) {
  const double n = static_cast<double>(group.size());
  if (group.size() < 2) return 0;
  if (algorithm == "direct") return n * (n - 1);
  const GroupShape shape = analyse_group(m, group);
  if (algorithm != "per_dimension" || !shape.is_grid) return 0;
  double transfers = 0;
  for (const auto& values : shape.values) transfers += n * static_cast<double>(values.size() - 1);
  return transfers;
}

GroupPlan all_to_all_plan(const Machine& m, const std::vector<int>& group,
                          const std::string& algorithm) {
  GroupPlan plan;
  if (group.size() < 2) return plan;
  if (algorithm == "direct") {
    PlanPhase p = exchange_phase(1.0 / static_cast<double>(group.size()));
    p.rings.push_back(all_pairs(m, group));
    plan.phases.push_back(std::move(p));
    return plan;
  }
  if (algorithm != "per_dimension")
    throw ConfigError(
        "collectives.all_to_all_algorithm",
        "unknown all-to-all algorithm '" + algorithm + "'; allowed: auto, direct, per_dimension");
  const GroupShape shape = analyse_group(m, group);
  if (!shape.is_grid)
    throw ConfigError("collectives.all_to_all_algorithm",
                      "per_dimension needs a group that is a sub-grid of the machine; use direct");
  // Dimension by dimension, each line exchanges among its members: after the pass along d a
  // piece has reached its destination's coordinate in d. Every pass moves the whole buffer.
  for (int d = 0; d < static_cast<int>(shape.values.size()); ++d) {
    const std::size_t extent = shape.values[d].size();
    if (extent < 2) continue;
    PlanPhase p = exchange_phase(1.0 / static_cast<double>(extent));
    for (const auto& line : lines_along(m, shape, group, d)) p.rings.push_back(all_pairs(m, line));
    plan.phases.push_back(std::move(p));
  }
  return plan;
}

}  // namespace tpusim
