#pragma once
// Cheap lower bounds on the step time of a Program, computed without simulating, so that
// `tpusim plan` can skip layouts that cannot win.
//
//  - Compute: a core runs its compute ops one after the other, each taking at least the
//    TensorCore cost formula's time (sim/tensor_core_cost.hpp, the same formula the executor
//    uses), so the step takes at least their sum. Collective reductions and waiting only add.
//  - Critical path: a core issues the Program's ops in order (sim/core/tensor_core.hpp): a
//    compute op starts once the core is free and its inputs are done; a collective starts once
//    its inputs are done and takes at least the time its members need to receive what they must
//    (below) over the links its group can use. Played in program order with those times, the
//    core's last op and last collective end no earlier than in the simulation: the step takes
//    at least that. This is where the collectives a layout cannot hide count (Megatron's
//    all-reduces between the matmuls of a layer, an FSDP gather nothing can overlap).
//  - Bisection: cut the largest grid dimension in half. A collective group with members on both
//    sides must move bytes across the cut in each direction (N members, n_A and n_B on the two
//    sides, S bytes per member): all-reduce S (each side's contribution to the other side's
//    shards, then the reduced shards back: (n_A + n_B) S / N); reduce-scatter n_B S / N one way
//    and n_A S / N the other; all-gather the same with the sides swapped; all-to-all
//    n_A n_B S / N. Each direction of the cut carries at most bisection links x link bandwidth,
//    and every collective's crossing bytes share those links, so the step takes at least the
//    larger direction's bytes over that rate. Collective-permutes count nothing (a valid bound).
//  - Ingress: what a chip's cores must receive over the step, over the links into the chip.
//    A group whose members differ only along some torus dimensions (and the cores of a chip)
//    is routed along those only (dimension-order routes; on a twisted torus every dimension
//    counts), so for every set X of those dimensions the collectives confined to X share the
//    links along X.
//  What a member must receive of a collective of S bytes over p members: all-gather and
//  all-to-all (p-1)/p S (the others' shards or pieces); all-reduce 2 (p-1)/p S on average under
//  any algorithm (one-way gossip takes 2 (p-1) messages per element); reduce-scatter (p-1)/p S
//  on average (p-1 merges per piece); a permute S where it receives. The ingress bound uses the
//  average. The critical path uses what each member receives under every algorithm tpusim
//  simulates (sim/collectives/algorithms): the rings, per-dimension rings and recursive
//  halving-doubling give every member 2 (p-1)/p S of an all-reduce and (p-1)/p S of a
//  reduce-scatter, one-shot more, (p-1) S and (p-1)/p S. A chip's cores share its ICI links, so
//  the critical path also takes, for a group of p cores on P chips with the same number on each,
//  what the chip as a whole must take in over them (2 links a torus dimension the group spans;
//  where routes are shortest, only the links into the chip that routes from the group's other
//  members arrive on, at the group's chip with the fewest: a run of chips that does not close
//  its ring, such as 2 of an 8-chip ring's chips or any run of a grid without wrap, gives its end
//  chips 1 link along it, as the shorter way round arrives from one side; the cores' on-chip
//  path does not count): of an all-reduce 2 (P-1)/P S (every algorithm tpusim
//  simulates: a ring through each chip's cores in turn carries 2 (p-1)/p S into it; per-dimension
//  rings and the on-chip algorithm reduce on the chip and carry 2 (P-1)/P of the chip's share
//  in; halving-doubling and recursive doubling exchange with the chip's partner on the chip once
//  and the rest over its links), of a reduce-scatter or all-gather (P-1)/P S (the other chips'
//  shards must enter, or this chip's contributions to theirs leave, once), of an all-to-all
//  p/P (P-1)/P S (the pieces from the other chips' cores). Without megacore this is the larger:
//  a model group of 16 cores on 8 chips takes 1.75 S over 2 links, where a core's share alone
//  counted 1.875 S over 2 links and the on-chip path. (Any algorithm must give a member
//  only S and S/p: every element's sum needs one value from elsewhere; an algorithm that gave
//  some members less than the average would make this bound unsafe for it.) Collectives across
//  slices (the data-center network) count nothing in either. The bound is the largest of the four:
//  each holds alone.
#include <memory>

#include "core/hardware.hpp"
#include "models/program.hpp"
#include "topologies/topology.hpp"

namespace tpusim::plan {

struct StepBound {
  double compute_ms = 0;    ///< sum of the compute ops' formula times on one core
  double bisection_ms = 0;  ///< bytes across the bisection over its capacity
  double critical_ms = 0;   ///< the ops in program order with least collective times
  double ingress_ms = 0;    ///< bytes into a chip over the links they can use
  double step_ms() const;
};

/// Where each set of mesh axes' collective groups reach, for Programs of one mesh on one
/// topology and chip (the depths of one layout that plan's memory screen builds): kept by
/// step_lower_bound instead of placing the groups again. Not for another mesh.
class GroupReachCache {
 public:
  GroupReachCache();
  ~GroupReachCache();
  struct Entries;
  std::unique_ptr<Entries> entries;
};

/// `queued_shortest_routes`: every route is a shortest one and links queue what crosses them
/// (false where network.failed_links sends routes the other way round a ring, or
/// network.contention=false lets a link carry several transfers at once): the critical path
/// then counts only the links into a group's chip that routes from its other members arrive on.
StepBound step_lower_bound(const Program& program, const Topology& topology, const HardwareSpec& hw,
                           GroupReachCache* reach = nullptr, bool queued_shortest_routes = true);

}  // namespace tpusim::plan
