// Latency-bound algorithms for groups of 2^k members, in grid order (so on a sub-grid with
// power-of-two extents every partner lies along one dimension).
// recursive_doubling: an all-reduce in log2(n) steps; in step k member i swaps its whole buffer
// with member i xor 2^k and sums: log2(n) latencies, log2(n) x S bytes per member.
// halving_doubling: the reduce-scatter halves the data at every step (member i keeps one half and
// sends the other to i xor 2^k: S/2, S/4, ... S/n), the all-gather doubles it back in reverse
// order: 2 log2(n) latencies and 2 (n-1)/n x S bytes per member, as a ring's bandwidth.
// Reduce-scatter and all-gather alone are the halving or the doubling half of halving_doubling.
#include <algorithm>
#include <cmath>

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

/// The most hops between a member and its partner across `bit` (members in grid order).
int longest_swap(const Machine& m, const std::vector<int>& order, int bit) {
  int most = 0;
  for (std::size_t i = 0; i < order.size(); ++i)
    most = std::max(most, m.topology().hops(m.chip_of(order[i]),
                                            m.chip_of(order[i ^ (std::size_t{1} << bit)])));
  return most;
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
    const HardwareSpec& hw = m.hardware();
    const double per_chip = static_cast<double>(shape.values[0].size());
    const int onchip_bits = shape.is_grid ? log2_exact(shape.values[0].size()) : 0;
    const std::vector<int> order = shape.is_grid ? grid_order(m, group) : std::vector<int>{};
    return phases(kind, bits, [&](int bit, StepKind step, double fraction) {
      PlanPhase p = one_step(step, fraction);
      const bool offchip = bit >= onchip_bits;
      const LinkFloor f = !shape.is_grid ? any_link_floor(hw)
                          : offchip      ? link_floor(hw, true, per_chip)
                                         : link_floor(hw, false);
      p.link_s_per_byte = f.s_per_byte;
      // Between chips the longest route is known without routing: dimension order takes the
      // fewest hops (more round a failed link), each an ICI link of the same latency.
      p.path_latency =
          shape.is_grid && offchip ? hw.ici_latency * longest_swap(m, order, bit) : f.latency;
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

const AlgorithmRegistrar kDoubling{"recursive_doubling", make_variant<Recursive, false>};
const AlgorithmRegistrar kHalving{"halving_doubling", make_variant<Recursive, true>};

}  // namespace
}  // namespace tpusim
