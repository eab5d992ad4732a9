#pragma once
// Cheap lower bounds on the step time of a Program, computed without simulating, so that
// `tpusim plan` can skip layouts that cannot win.
//
//  - Compute: a core runs its compute ops one after the other, each taking at least the
//    TensorCore cost formula's time (sim/tensor_core_cost.hpp, the same formula the executor
//    uses), so the step takes at least their sum. Collective reductions and waiting only add.
//  - Bisection: cut the largest grid dimension in half. A collective group with members on both
//    sides must move bytes across the cut in each direction (N members, n_A and n_B on the two
//    sides, S bytes per member): all-reduce S (each side's contribution to the other side's
//    shards, then the reduced shards back: (n_A + n_B) S / N); reduce-scatter n_B S / N one way
//    and n_A S / N the other; all-gather the same with the sides swapped; all-to-all
//    n_A n_B S / N. Each direction of the cut carries at most bisection links x link bandwidth,
//    and every collective's crossing bytes share those links, so the step takes at least the
//    larger direction's bytes over that rate. Collective-permutes count nothing (a valid bound).
//  The bound is max(compute, bisection): both can overlap, neither can be beaten.
#include "core/hardware.hpp"
#include "models/program.hpp"
#include "topologies/topology.hpp"

namespace tpusim::plan {

struct StepBound {
  double compute_ms = 0;    ///< sum of the compute ops' formula times on one core
  double bisection_ms = 0;  ///< bytes across the bisection over its capacity
  double step_ms() const { return compute_ms > bisection_ms ? compute_ms : bisection_ms; }
};

StepBound step_lower_bound(const Program& program, const Topology& topology,
                           const HardwareSpec& hw);

}  // namespace tpusim::plan
