// One ring over the whole group, one way or both ways. The ring visits the group in
// boustrophedon order through its sub-grid (core within chip fastest, then X, then Y, each
// row reversing), so consecutive members are neighbours; groups that are not sub-grids go in
// mesh order. The outermost (slowest) dimension of that order is the last the group spans,
// unless that one does not go round its torus ring and another does (an even number, at least
// four, of coordinates evenly spaced all round a wrapping dimension): then that one is
// outermost. The ring then closes over that dimension's wrap link, and shifting the group by two
// of its steps along that dimension maps the ring onto itself, which keeps the symmetric
// simulation's domain small (docs/network.md, "A ring's walk and the domain": model groups of
// 8 x 2 chips, walked with X inner and Y outer, turned at X = 0 and X = 7, which no shift along
// X below 8 keeps).
#include <algorithm>

#include "sim/collectives/collective_algorithm.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {
namespace {

/// True if the group's coordinates along grid dimension `d` (> 0) are an even number, at least
/// four, evenly spaced all round a wrapping dimension of a torus that is not twisted: its
/// members along it then close a ring whose every step, the wrap too, is the same shift.
bool goes_round(const Machine& m, const GroupShape& shape, int d) {
  const Topology& topo = m.topology();
  const std::vector<int>& v = shape.values[static_cast<std::size_t>(d)];
  const int n = static_cast<int>(v.size());
  if (d == 0 || n < 4 || n % 2 || topo.twisted_dim() >= 0 || !topo.wraps(d - 1)) return false;
  const int step = topo.dim(d - 1) / n;
  if (step * n != topo.dim(d - 1)) return false;
  for (int i = 0; i < n; ++i)
    if (v[static_cast<std::size_t>(i)] != v[0] + i * step) return false;
  return true;
}

/// The dimensions of the snake, slowest first: the last the group spans, or the one that goes
/// round its ring in its place (see the top of the file), then the others from the last down.
std::vector<int> snake_dims(const Machine& m, const GroupShape& shape) {
  const int dims = static_cast<int>(shape.values.size());
  std::vector<int> order;
  for (int d = dims - 1; d >= 0; --d) order.push_back(d);
  auto spans = [&](int d) { return shape.values[static_cast<std::size_t>(d)].size() > 1; };
  const auto last = std::find_if(order.begin(), order.end(), spans);
  if (last == order.end() || goes_round(m, shape, *last)) return order;
  const auto round =
      std::find_if(last, order.end(), [&](int d) { return goes_round(m, shape, d); });
  if (round != order.end()) std::rotate(order.begin(), round, round + 1);
  return order;
}

std::vector<int> snake_order(const Machine& m, const std::vector<int>& group) {
  const GroupShape shape = analyse_group(m, group);
  if (!shape.is_grid) return group;
  // Rank of each member: mixed-radix digits over the dimensions, each digit reversed when the
  // digits above it sum to an odd number (that is what makes rows alternate).
  std::vector<std::pair<long long, int>> keyed;
  const std::vector<int> dims = snake_dims(m, shape);
  for (int core : group) {
    const std::vector<int> digit = shape.digits(m, core);
    long long key = 0;
    int parity = 0;
    for (int d : dims) {
      const int n = static_cast<int>(shape.values[static_cast<std::size_t>(d)].size());
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
