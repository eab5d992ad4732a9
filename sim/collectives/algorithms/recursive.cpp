// Latency-bound algorithms for groups of 2^k members, in grid order (so on a sub-grid with
// power-of-two extents every partner lies along one dimension).
// recursive_doubling: an all-reduce in log2(n) steps; in step k member i swaps its whole buffer
// with member i xor 2^k and sums: log2(n) latencies, log2(n) x S bytes per member.
// halving_doubling: the reduce-scatter halves the data at every step (member i keeps one half and
// sends the other to i xor 2^k: S/2, S/4, ... S/n), the all-gather doubles it back in reverse
// order: 2 log2(n) latencies and 2 (n-1)/n x S bytes per member, as a ring's bandwidth.
// Reduce-scatter and all-gather alone are the halving or the doubling half of halving_doubling.
// shift_doubling: recursive doubling's all-reduce, but along a dimension that is a whole ring of
// the torus member i sends half its buffer to the member 2^j ahead and half to the one 2^j
// behind instead of swapping with i xor 2^j (the bit that halves the ring swaps, since +n/2 and
// -n/2 meet there): each half is summed by a dissemination, so after the ring's bits every member
// holds its line's sum. The same steps and hops as recursive doubling, half its busiest link's
// bytes, and every member does what its neighbour along the ring does, so the plan is the same
// under every translation along it (a symmetric run's domain is not widened by it).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/errors.hpp"
#include "sim/collectives/collective_algorithm.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {
namespace {

int log2_exact(std::size_t n) {
  int k = 0;
  while ((std::size_t{1} << k) < n) ++k;
  return (std::size_t{1} << k) == n ? k : -1;
}

/// One swap step: every member sends `fraction` of the buffer.
PlanPhase one_step(StepKind kind, double fraction) {
  PlanPhase p;
  p.kind = kind;
  p.steps = 1;
  p.step_fraction = fraction;
  return p;
}

PlanPhase swap_phase(const Machine& m, const std::vector<int>& order, int bit, StepKind kind,
                     double fraction) {
  std::vector<std::vector<int>> partners(order.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    partners[i] = {static_cast<int>(i ^ (std::size_t{1} << bit))};
  PlanPhase p = one_step(kind, fraction);
  p.rings.push_back(make_exchange(m, order, partners));
  return p;
}

/// One bit of a 2^k group's rank in grid order: the dimension it belongs to (0: the core within
/// the chip), the shift 2^j it stands for along that dimension, the dimension's extent in the
/// group and its rank stride, and whether the bit shifts round a ring (shift_doubling).
struct RankBit {
  int dim = 0;
  int shift = 1;
  int extent = 1;
  std::size_t stride = 1;
  bool cyclic = false;
  /// Its swaps' routes run straight along the dimension, all one way within a block: the
  /// group's coordinates there are consecutive and the shift is below half a ring (or half of
  /// a whole ring, where they all go the + way).
  bool straight = false;
};

/// The bits of a sub-grid group's rank, lowest first. A dimension shifts round a ring when the
/// group spans the whole of a topology dimension that wraps on a plain torus of one slice (a
/// twisted torus's wrap links land shifted; between slices there is no ring), and only below
/// the bit that halves it.
std::vector<RankBit> rank_bits(const Machine& m, const GroupShape& shape) {
  const Topology& topo = m.topology();
  const bool plain = topo.twisted_dim() < 0 && topo.slices() == 1;
  std::vector<RankBit> bits;
  std::size_t stride = 1;
  for (std::size_t d = 0; d < shape.values.size(); ++d) {
    const auto& v = shape.values[d];
    const int extent = static_cast<int>(v.size());
    const int t = static_cast<int>(d) - 1;
    const bool ring = plain && t >= 0 && topo.wraps(t) && extent == topo.dim(t);
    const bool consecutive = t >= 0 && v.back() - v.front() == extent - 1;
    for (int shift = 1; shift < extent; shift *= 2) {
      // Half way round a whole ring every route goes the + way (Topology::offset's tie), so
      // each link is crossed by the `shift` chips behind it, as below half a ring.
      const bool short_way =
          t >= 0 && (!topo.wraps(t) || 2 * shift < topo.dim(t) || (ring && 2 * shift == extent));
      bits.push_back({static_cast<int>(d), shift, extent, stride, ring && 2 * shift < extent,
                      plain && consecutive && short_way});
    }
    stride *= static_cast<std::size_t>(extent);
  }
  return bits;
}

/// The rank `by` places further along the bit's dimension, round its ring.
std::size_t moved(std::size_t rank, const RankBit& b, int by) {
  const int digit = static_cast<int>(rank / b.stride % static_cast<std::size_t>(b.extent));
  const int to = ((digit + by) % b.extent + b.extent) % b.extent;
  return rank + static_cast<std::size_t>(to) * b.stride -
         static_cast<std::size_t>(digit) * b.stride;
}

/// The most hops between a member and its partner across `bit` (members in grid order). The
/// partners differ along the bit's dimension only, so on a plain torus the coordinates the
/// group spans there suffice; a twisted torus's hops are counted member by member.
int longest_swap(const Machine& m, const GroupShape& shape, const std::vector<int>& order,
                 const std::vector<RankBit>& bits, int bit) {
  const Topology& topo = m.topology();
  const RankBit& b = bits[static_cast<std::size_t>(bit)];
  int most = 0;
  if (topo.twisted_dim() < 0) {
    const auto& v = shape.values[static_cast<std::size_t>(b.dim)];
    for (std::size_t p = 0; p < v.size(); ++p)
      most = std::max(
          most, std::abs(topo.offset(v[p], v[p ^ static_cast<std::size_t>(b.shift)], b.dim - 1)));
    return most;
  }
  for (std::size_t i = 0; i < order.size(); ++i)
    most = std::max(most,
                    topo.hops(m.chip_of(order[i]), m.chip_of(order[i ^ (std::size_t{1} << bit)])));
  return most;
}

/// The busiest link of a step across `b` carries at least `per_chip` streams (a chip's members
/// share its first link towards the partner chip). Where the routes run straight along the
/// dimension (and no failed link turns one round), a swap's 2^j chips of a block's lower half
/// all cross the link into its upper half, and a shift's 2^j chips behind a link all cross it.
double swap_sharing(const Machine& m, const RankBit& b, double per_chip) {
  return b.straight && m.routes_translate() ? per_chip * b.shift : per_chip;
}

/// A bound plan's floors for a step across `bit` of a sub-grid group (bits: rank_bits): on the
/// chip, the on-chip path; between chips, the streams its busiest ICI link must carry
/// (swap_sharing) and the longest route's latency, known without routing: dimension order takes
/// the fewest hops (more round a failed link), each an ICI link of the same latency.
void bound_step(PlanPhase& p, const Machine& m, const GroupShape& shape,
                const std::vector<int>& order, const std::vector<RankBit>& bits, int bit) {
  const HardwareSpec& hw = m.hardware();
  const RankBit& b = bits[static_cast<std::size_t>(bit)];
  if (b.dim == 0) {
    const LinkFloor f = link_floor(hw, false);
    p.link_s_per_byte = f.s_per_byte;
    p.path_latency = f.latency;
    return;
  }
  const double per_chip = static_cast<double>(shape.values[0].size());
  p.link_s_per_byte = link_floor(hw, true, swap_sharing(m, b, per_chip)).s_per_byte;
  p.path_latency = hw.ici_latency * longest_swap(m, shape, order, bits, bit);
}

/// describe() of recursive doubling and of halving-doubling.
const char* const kRecursiveLines[2] = {
    "recursive doubling: log2(n) whole-buffer swaps (2^k groups)",
    "halving-doubling: reduce-scatter halving, all-gather doubling (2^k groups)"};

class Recursive : public DescribedAlgorithm {
 public:
  explicit Recursive(bool halving)
      : DescribedAlgorithm(kRecursiveLines[halving]), halving_(halving) {}

  GroupPlan plan(const Machine& m, CollectiveKind kind,
                 const std::vector<int>& group) const override {
    const int bits = check(kind, group);
    const std::vector<int> order = grid_order(m, group);
    // Halving-doubling's all-gather swaps over the partners of its reduce-scatter: each bit's
    // exchange is routed once.
    std::vector<const PlanPhase*> routed(static_cast<std::size_t>(bits), nullptr);
    GroupPlan plan = phases(
        kind, bits,
        [&](int bit, StepKind step, double fraction) {
          if (!routed[bit]) return swap_phase(m, order, bit, step, fraction);
          PlanPhase p = one_step(step, fraction);
          p.rings = routed[bit]->rings;
          return p;
        },
        &routed);
    return plan;
  }

  /// In grid order the bits below the core-within-chip extent swap on the chip; every other
  /// bit swaps with the same core index of another chip, so the members of a chip send to one
  /// partner chip over one route and share its first ICI link. A group that is not a sub-grid
  /// keeps mesh order: any link may serve any bit.
  GroupPlan bound_plan(const Machine& m, CollectiveKind kind,
                       const std::vector<int>& group) const override {
    const int bits = check(kind, group);
    const GroupShape shape = analyse_group(m, group);
    // Member order is needed only to count a twisted torus's hops member by member.
    const std::vector<int> order = shape.is_grid && m.topology().twisted_dim() >= 0
                                       ? grid_order(m, shape, group)
                                       : std::vector<int>{};
    const std::vector<RankBit> places =
        shape.is_grid ? rank_bits(m, shape) : std::vector<RankBit>{};
    return phases(kind, bits, [&](int bit, StepKind step, double fraction) {
      PlanPhase p = one_step(step, fraction);
      if (shape.is_grid) {
        bound_step(p, m, shape, order, places, bit);
      } else {
        const LinkFloor f = any_link_floor(m.hardware());
        p.link_s_per_byte = f.s_per_byte;
        p.path_latency = f.latency;
      }
      return p;
    });
  }

 private:
  /// log2 of the group's size; ConfigError if the group cannot be served.
  int check(CollectiveKind kind, const std::vector<int>& group) const {
    if (kind != CollectiveKind::AllReduce && !halving_)
      throw ConfigError("collectives.algorithm",
                        "recursive_doubling is an all-reduce algorithm; for a reduce-scatter or an "
                        "all-gather use halving_doubling");
    const int bits = log2_exact(group.size());
    if (bits < 0)
      throw ConfigError("collectives.algorithm",
                        std::string(halving_ ? "halving_doubling" : "recursive_doubling") +
                            " needs a group of 2^k members; this one has " +
                            std::to_string(group.size()));
    return bits;
  }

  /// The phases of the plan, each made by `swap(bit, kind, fraction)`; `made` (if given) gets,
  /// per bit, the first phase made for it.
  template <class Swap>
  GroupPlan phases(CollectiveKind kind, int bits, Swap swap,
                   std::vector<const PlanPhase*>* made = nullptr) const {
    GroupPlan plan;
    plan.phases.reserve(2 * static_cast<std::size_t>(bits));  // `made` points into it
    auto add = [&](int b, StepKind step, double fraction) {
      plan.phases.push_back(swap(b, step, fraction));
      if (made && !(*made)[b]) (*made)[b] = &plan.phases.back();
    };
    if (kind == CollectiveKind::AllReduce && !halving_) {
      for (int b = 0; b < bits; ++b) add(b, StepKind::ReduceScatter, 1.0);
      return plan;
    }
    // Step k of the halving moves 1/2^(k+1) of the buffer; nearest partners carry the most.
    if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter)
      for (int b = 0; b < bits; ++b) add(b, StepKind::ReduceScatter, 1.0 / (2 << b));
    if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::AllGather)
      for (int b = bits - 1; b >= 0; --b) add(b, StepKind::AllGather, 1.0 / (2 << b));
    return plan;
  }

  bool halving_;
};

class ShiftDoubling : public DescribedAlgorithm {
 public:
  ShiftDoubling()
      : DescribedAlgorithm(
            "shift doubling: recursive doubling with partners 2^j ahead and behind round a "
            "whole ring, half the buffer each way (2^k sub-grid groups)") {}

  /// Each step between chips is one exchange per line of the group along its bit's dimension
  /// (the members that share every other coordinate, the cores of a chip together since they
  /// share its links): the lines' sends cross disjoint links, so each line is its own batch, and
  /// a symmetric run keeps only the lines with members in its domain. The swap between a chip's
  /// cores is one exchange (each chip's on its own links).
  GroupPlan plan(const Machine& m, CollectiveKind kind,
                 const std::vector<int>& group) const override {
    const GroupShape shape = check(m, kind, group);
    const std::vector<int> order = grid_order(m, shape, group);
    const std::size_t per_chip = shape.values[0].size();
    const std::size_t n = order.size();
    GroupPlan plan;
    std::vector<int> line_of(n), pos(n);
    std::size_t bit = 0;
    for (const RankBit& b : rank_bits(m, shape)) {
      if (b.dim == 0) {  // the swap between a chip's cores: one exchange over the group
        plan.phases.push_back(
            swap_phase(m, order, static_cast<int>(bit++), StepKind::ReduceScatter, 1.0));
        continue;
      }
      // Lines: ranks that differ only in the core within the chip and this dimension's digit.
      std::vector<std::vector<std::size_t>> lines;
      std::fill(line_of.begin(), line_of.end(), -1);
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t digit = i / b.stride % static_cast<std::size_t>(b.extent);
        const std::size_t key = i - i % per_chip - digit * b.stride;
        if (line_of[key] < 0) {
          line_of[key] = static_cast<int>(lines.size());
          lines.emplace_back();
        }
        pos[i] = static_cast<int>(lines[static_cast<std::size_t>(line_of[key])].size());
        lines[static_cast<std::size_t>(line_of[key])].push_back(i);
      }
      PlanPhase p = b.cyclic ? shift_step() : one_step(StepKind::ReduceScatter, 1.0);
      for (const auto& line : lines) {
        std::vector<int> members;
        std::vector<std::vector<int>> partners;
        for (std::size_t i : line) {
          members.push_back(order[i]);
          if (b.cyclic)
            partners.push_back({pos[moved(i, b, b.shift)], pos[moved(i, b, -b.shift)]});
          else
            partners.push_back({pos[i ^ (std::size_t{1} << bit)]});
        }
        p.rings.push_back(make_exchange(m, members, partners));
      }
      plan.phases.push_back(std::move(p));
      ++bit;
    }
    return plan;
  }

  /// As recursive doubling's bound, each step at least one ICI link's latency per hop to its
  /// partner (a shift of 2^j round a ring is 2^j hops, below half the ring) and the members of a
  /// chip sharing its first link; a shifting step sends half the buffer each way.
  GroupPlan bound_plan(const Machine& m, CollectiveKind kind,
                       const std::vector<int>& group) const override {
    const GroupShape shape = check(m, kind, group);
    // Member order is needed only to count a twisted torus's hops member by member.
    const std::vector<int> order =
        m.topology().twisted_dim() >= 0 ? grid_order(m, shape, group) : std::vector<int>{};
    const std::vector<RankBit> places = rank_bits(m, shape);
    GroupPlan plan;
    for (std::size_t bit = 0; bit < places.size(); ++bit) {
      // Round a ring the 2^j chips behind a link all send across it, half the buffer each, and
      // the partner is 2^j hops away (below half the ring), as recursive doubling's.
      PlanPhase p = places[bit].cyclic ? shift_step() : one_step(StepKind::ReduceScatter, 1.0);
      bound_step(p, m, shape, order, places, static_cast<int>(bit));
      plan.phases.push_back(std::move(p));
    }
    return plan;
  }

 private:
  /// The sub-grid shape of a 2^k group; ConfigError if the group cannot be served.
  static GroupShape check(const Machine& m, CollectiveKind kind, const std::vector<int>& group) {
    if (kind != CollectiveKind::AllReduce)
      throw ConfigError("collectives.algorithm", "shift_doubling is an all-reduce algorithm");
    if (log2_exact(group.size()) < 0)
      throw ConfigError("collectives.algorithm",
                        "shift_doubling needs a group of 2^k members; this one has " +
                            std::to_string(group.size()));
    GroupShape shape = analyse_group(m, group);
    if (!shape.is_grid)
      throw ConfigError("collectives.algorithm",
                        "shift_doubling needs a group that is a sub-grid of the machine");
    return shape;
  }

  /// Half the buffer to the member ahead and half to the one behind; each sums the two halves
  /// it receives.
  static PlanPhase shift_step() {
    PlanPhase p = one_step(StepKind::ReduceScatter, 1.0);
    p.bidirectional = true;
    return p;
  }
};

const AlgorithmRegistrar kDoubling{"recursive_doubling", make_variant<Recursive, false>};
const AlgorithmRegistrar kShift{"shift_doubling", []() -> std::unique_ptr<CollectiveAlgorithm> {
                                  return std::make_unique<ShiftDoubling>();
                                }};
const AlgorithmRegistrar kHalving{"halving_doubling", make_variant<Recursive, true>};

}  // namespace
}  // namespace tpusim
