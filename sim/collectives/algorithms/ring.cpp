// One ring over the whole group, one way or both ways. The ring visits the group in
// boustrophedon order through its sub-grid (core within chip fastest, then X, then Y, each
// row reversing), so consecutive members are neighbours; groups that are not sub-grids go in
// mesh order.
#include <algorithm>

#include "sim/collectives/collective_algorithm.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {
namespace {

std::vector<int> snake_order(const Machine& m, const std::vector<int>& group) {
  const GroupShape shape = analyse_group(m, group);
  if (!shape.is_grid) return group;
  // Rank of each member: mixed-radix digits over the dimensions, each digit reversed when the
  // digits above it sum to an odd number (that is what makes rows alternate).
  std::vector<std::pair<long long, int>> keyed;
  const int dims = static_cast<int>(shape.values.size());
  for (int core : group) {
    const std::vector<int> digit = shape.digits(m, core);
    long long key = 0;
    int parity = 0;
    for (int d = dims - 1; d >= 0; --d) {
      const int n = static_cast<int>(shape.values[d].size());
      const int dig = parity % 2 ? n - 1 - digit[d] : digit[d];
      key = key * n + dig;
      parity += dig;
    }
    keyed.emplace_back(key, core);
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> order;
  for (const auto& [_, core] : keyed) order.push_back(core);
  return order;
}

/// describe() of the one-way and the two-way ring.
const char* const kRingLines[2] = {
    "ring one way: one unidirectional ring over the group",
    "ring both ways: half the data each way round one ring over the group"};

class RingAlgorithm : public DescribedAlgorithm {
 public:
  explicit RingAlgorithm(bool both_ways)
      : DescribedAlgorithm(kRingLines[both_ways]), both_ways_(both_ways) {}
  GroupPlan plan(const Machine& m, CollectiveKind kind,
                 const std::vector<int>& group) const override {
    DimRings d;
    d.rings.push_back(snake_order(m, group));
    d.bidirectional = both_ways_;
    return ring_phases(m, kind, {d});
  }
  /// The same phases, every step over at least one ICI link if the group spans chips.
  GroupPlan bound_plan(const Machine& m, CollectiveKind kind,
                       const std::vector<int>& group) const override {
    DimRings d;
    d.rings.push_back(group);  // only the ring's size counts
    d.bidirectional = both_ways_;
    const LinkFloor f = link_floor(m.hardware(), spans_chips(m, group));
    d.link_s_per_byte = f.s_per_byte;
    d.path_latency = f.latency;
    return ring_phases(m, kind, {d}, false);
  }

 private:
  bool both_ways_;
};

const AlgorithmRegistrar kOneWay{"ring", make_variant<RingAlgorithm, false>};
const AlgorithmRegistrar kBothWays{"bidirectional_ring", make_variant<RingAlgorithm, true>};

}  // namespace
}  // namespace tpusim
