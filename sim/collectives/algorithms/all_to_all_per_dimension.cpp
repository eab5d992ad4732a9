// The all-to-all by dimensions: one exchange per grid dimension in turn, among the members of each
// line (sub-grid groups only). After the pass along d a piece has reached its destination's
// coordinate in d; every pass moves the whole buffer.
#include "core/errors.hpp"
#include "sim/collectives/collective_algorithm.hpp"

namespace tpusim {
namespace {

class PerDimensionAllToAll final : public AllToAllAlgorithm {
 public:
  GroupPlan plan(const Machine& m, const std::vector<int>& group) const override {
    const GroupShape shape = analyse_group(m, group);
    if (!shape.is_grid)
      throw ConfigError(
          "collectives.all_to_all_algorithm",
          "per_dimension needs a group that is a sub-grid of the machine; use direct");
    GroupPlan plan;
    for (int d = 0; d < static_cast<int>(shape.values.size()); ++d) {
      const std::size_t extent = shape.values[d].size();
      if (extent < 2) continue;
      PlanPhase p = exchange_phase(1.0 / static_cast<double>(extent));
      for (const auto& line : lines_along(m, shape, group, d))
        p.rings.push_back(all_pairs_exchange(m, line));
      plan.phases.push_back(std::move(p));
    }
    return plan;
  }
  // n (extent - 1) summed over the group's dimensions.
  double transfers(const Machine& m, const std::vector<int>& group) const override {
    const GroupShape shape = analyse_group(m, group);
    if (!shape.is_grid) return 0;
    const double n = static_cast<double>(group.size());
    double transfers = 0;
    for (const auto& values : shape.values) transfers += n * static_cast<double>(values.size() - 1);
    return transfers;
  }
};

const AllToAllRegistrar kPerDimensionAllToAll{
    "per_dimension", [] { return std::unique_ptr<AllToAllAlgorithm>(new PerDimensionAllToAll); }};

}  // namespace
}  // namespace tpusim
