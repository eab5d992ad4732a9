// Latency-bound algorithms for groups of 2^k members, in grid order (so on a sub-grid with
// power-of-two extents every partner lies along one dimension).
// recursive_doubling: an all-reduce in log2(n) steps; in step k member i swaps its whole buffer
// with member i xor 2^k and sums: log2(n) latencies, log2(n) x S bytes per member.
// halving_doubling: the reduce-scatter halves the data at every step (member i keeps one half and
// sends the other to i xor 2^k: S/2, S/4, ... S/n), the all-gather doubles it back in reverse
// order: 2 log2(n) latencies and 2 (n-1)/n x S bytes per member, as a ring's bandwidth.
// Reduce-scatter and all-gather alone are the halving or the doubling half of halving_doubling.
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

PlanPhase swap_phase(const Machine& m, const std::vector<int>& order, int bit, StepKind kind,
                     double fraction) {
  std::vector<std::vector<int>> partners(order.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    partners[i] = {static_cast<int>(i ^ (std::size_t{1} << bit))};
  PlanPhase p;
  p.kind = kind;
  p.steps = 1;
  p.step_fraction = fraction;
  p.rings.push_back(make_exchange(m, order, partners));
  return p;
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
    const std::vector<int> order = grid_order(m, group);
    GroupPlan plan;
    if (kind == CollectiveKind::AllReduce && !halving_) {
      for (int b = 0; b < bits; ++b)
        plan.phases.push_back(swap_phase(m, order, b, StepKind::ReduceScatter, 1.0));
      return plan;
    }
    // Step k of the halving moves 1/2^(k+1) of the buffer; nearest partners carry the most.
    if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter)
      for (int b = 0; b < bits; ++b)
        plan.phases.push_back(swap_phase(m, order, b, StepKind::ReduceScatter, 1.0 / (2 << b)));
    if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::AllGather)
      for (int b = bits - 1; b >= 0; --b)
        plan.phases.push_back(swap_phase(m, order, b, StepKind::AllGather, 1.0 / (2 << b)));
    return plan;
  }

  /// Steps along the core-within-chip bits may use the on-chip path; every other step leaves
  /// the chip over an ICI link.
  Duration lower_bound(const Machine& m, CollectiveKind kind, const std::vector<int>& group,
                       double bytes) const override {
    const int bits = log2_exact(group.size());
    if (bits < 0) return Duration{};
    const int onchip_bits = log2_exact(analyse_group(m, group).values[0].size());
    const HardwareSpec& hw = m.hardware();
    Duration t;
    for (int b = 0; b < bits; ++b) {
      const Bandwidth bw = b < onchip_bits ? fastest_link(hw) : hw.ici_bandwidth;
      const double sent = kind == CollectiveKind::AllReduce && !halving_
                              ? bytes
                              : (kind == CollectiveKind::AllReduce ? 2 : 1) * bytes / (2 << b);
      t += bw.time_for(sent) +
           hw.collective_step_overhead * (kind == CollectiveKind::AllReduce && halving_ ? 2 : 1);
    }
    return t;
  }

 private:
  bool halving_;
};

const AlgorithmRegistrar kDoubling{"recursive_doubling", make_variant<Recursive, false>};
const AlgorithmRegistrar kHalving{"halving_doubling", make_variant<Recursive, true>};

}  // namespace
}  // namespace tpusim
