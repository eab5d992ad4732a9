// The direct all-to-all: one step in which every member sends its piece to every other member at
// once (n (n - 1) transfers), each routed in dimension order, so the pieces contend for links.
#include "sim/collectives/collective_algorithm.hpp"

namespace tpusim {
namespace {

class DirectAllToAll final : public AllToAllAlgorithm {
 public:
  GroupPlan plan(const Machine& m, const std::vector<int>& group) const override {
    GroupPlan plan;
    PlanPhase p = exchange_phase(1.0 / static_cast<double>(group.size()));
    p.rings.push_back(all_pairs_exchange(m, group));
    plan.phases.push_back(std::move(p));
    return plan;
  }
  double transfers(const Machine&, const std::vector<int>& group) const override {
    const double n = static_cast<double>(group.size());
    return n * (n - 1);
  }
  // Its plan holds n (n - 1) routes: `auto` tries it for groups up to 512.
  std::size_t auto_max_members() const override { return 512; }
};

const AllToAllRegistrar kDirectAllToAll{
    "direct", [] { return std::unique_ptr<AllToAllAlgorithm>(new DirectAllToAll); }};

}  // namespace
}  // namespace tpusim
