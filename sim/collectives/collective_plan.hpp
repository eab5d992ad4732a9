#pragma once
// A collective on one group of cores, as phases of point-to-point steps. Algorithms build plans;
// the engine plays them on the network.
#include <vector>

#include "core/hardware.hpp"
#include "models/program.hpp"
#include "sim/network/network.hpp"

namespace tpusim {

/// Members in ring order, with the routes to the next (and previous) member. An exchange (see
/// make_exchange) uses the same shape: `next` then holds every route of one step.
struct Ring {
  std::vector<int> members;
  std::vector<Route> next;  ///< members[i] -> its successor (empty route: sends nothing)
  std::vector<Route> prev;  ///< members[i] -> its predecessor (bidirectional rings only)
  /// The sending core of next[k] where it is not members[k] (exchanges); empty otherwise.
  std::vector<int> next_from;
  Duration path_latency;  ///< the longest route's summed hop latencies
  /// A ring projected onto a symmetric domain (symmetry.hpp) keeps only some members and
  /// sends; these are the sending routes and the members of the ring it stands for (negative:
  /// count this ring's).
  int represented_routes = -1;
  int represented_members = -1;
  void update_path_latency();
};

enum class StepKind {
  ReduceScatter,  ///< receivers sum what arrives into their buffer
  AllGather,      ///< receivers store what arrives
  Exchange        ///< one-off sends (permute, one all-to-all round)
};

struct PlanPhase {
  StepKind kind = StepKind::ReduceScatter;
  int steps = 0;
  /// Bytes each member sends per step, as a fraction of the collective's bytes; a bidirectional
  /// ring sends half of it each way.
  double step_fraction = 0;
  bool bidirectional = false;
  /// Pieces of step_fraction each receiver sums per step (one-shot all-reduce: n - 1).
  double reduce_pieces = 1;
  std::vector<Ring> rings;  ///< independent rings progressing in parallel
  /// Filled by profile_plans: the most time per byte sent by each route that any link of one step
  /// needs (routes crossing it / its bandwidth), the contention of the phase's own traffic.
  double link_s_per_byte = 0;
  Duration path_latency;  ///< filled by profile_plans: the longest ring's path latency
  /// Multislice: the phase crosses the data-center network (the cross-slice all-reduce of a
  /// hierarchical all-reduce), for the report's ICI / DCN split.
  bool dcn = false;

  /// A copy of every field above but `rings` (copying those would copy every route).
  PlanPhase without_rings() const {
    PlanPhase p;
    p.kind = kind;
    p.steps = steps;
    p.step_fraction = step_fraction;
    p.bidirectional = bidirectional;
    p.reduce_pieces = reduce_pieces;
    p.link_s_per_byte = link_s_per_byte;
    p.path_latency = path_latency;
    p.dcn = dcn;
    return p;
  }
};

struct GroupPlan {
  std::vector<PlanPhase> phases;
};

class Machine;

/// Builds a ring over `order` (cores); `closed` joins the last member to the first.
/// One step in which members[i] sends to members[j] for every j in partners[i].
Ring make_exchange(const Machine& m, const std::vector<int>& members,
                   const std::vector<std::vector<int>>& partners);

/// Fills each phase's link_s_per_byte and path_latency. The plans are of groups that run at the
/// same time: phase k of every plan counts towards the link load of phase k. `scratch` is a
/// reusable per-link table, all zero between calls (profile_plans leaves it so). `moved` (if
/// given, one entry per plan): where an entry is not empty, that plan is plans[0] and stands for
/// plans[0] moved by the entry (shifted_plan), which is counted without being built.
void profile_plans(const Machine& m, const std::vector<GroupPlan*>& plans,
                   std::vector<double>& scratch,
                   const std::vector<std::vector<int>>* moved = nullptr);
Ring make_ring(const Machine& m, const std::vector<int>& order, bool bidirectional,
               bool closed = true);

/// True, with `by` the shift per dimension, if `to` is `from` moved by one translation of the
/// chips, member by member (the same core within the chip, every coordinate moved by the same
/// amount and none wrapping round), on a machine whose routes move with its chips
/// (Machine::routes_translate). Every algorithm orders and routes a group by its members'
/// relative places, so the plan of `to` is then the plan of `from` moved (shifted_plan):
/// planning builds one plan per group shape and moves it to the other groups.
bool chip_shift(const Machine& m, const std::vector<int>& from, const std::vector<int>& to,
                std::vector<int>& by);
/// `plan` with every member, sender and link moved by `by` (chip_shift).
GroupPlan shifted_plan(const Machine& m, const GroupPlan& plan, const std::vector<int>& by);

/// Reduce-scatter and all-gather phases over rings, by kind:
/// all-reduce = RS phases in order then AG phases in reverse; reduce-scatter = RS phases;
/// all-gather = AG phases in reverse. Each entry of `dims` is one dimension's set of rings.
struct DimRings {
  std::vector<std::vector<int>> rings;  ///< each ring's members in ring order
  bool bidirectional = false;
  /// Unrouted phases only (see ring_phases): lower bounds of what profile_plans would find.
  double link_s_per_byte = 0;
  Duration path_latency;
};
/// `routed` false: the phases without rings, each taking its dimension's link_s_per_byte and
/// path_latency, for a lower bound of the plan's predicted time (CollectiveAlgorithm::bound_plan).
GroupPlan ring_phases(const Machine& m, CollectiveKind kind, const std::vector<DimRings>& dims,
                      bool routed = true);
/// Lower bounds of a phase's link_s_per_byte and path_latency for bound plans: every step
/// sends at least one stream over a link of its class, `sharing` streams over one of them
/// (the members of a chip towards one partner chip share its first ICI link), and waits at
/// least one link's latency.
struct LinkFloor {
  double s_per_byte = 0;
  Duration latency;
};
/// `offchip`: the step's streams leave the chip (ICI), else they stay on it (on-chip path).
LinkFloor link_floor(const HardwareSpec& hw, bool offchip, double sharing = 1);
/// Either may hold (a group whose members' placement is not known in advance).
LinkFloor any_link_floor(const HardwareSpec& hw);

/// Multislice (hierarchical_plan.cpp): the all-reduce of a group whose data axis spans S
/// slices (all the machine's, or with parallelism.dcn_fsdp the slices / dcn_fsdp that hold the
/// same fsdp shard), as JAX multislice does it: `reduce_scatter` inside the slice over ICI
/// (each of the N members then holds 1/N of the buffer), the all-reduce of that shard over
/// the S images of the member as a ring across the slices over the data-center network (S-1
/// reduce-scatter then S-1 all-gather steps of 1/(N S) of the buffer, over the member's DCN
/// route: 2 (S-1)/S of the shard each way), then `all_gather` inside the slice. fsdp across
/// slices (parallelism.dcn_fsdp, S its dcn_fsdp slices) passes one half: a reduce-scatter
/// (`all_gather` null) is the ICI reduce-scatter then S-1 DCN reduce-scatter steps, leaving
/// 1/(N S) on each core; an all-gather (`reduce_scatter` null) is S-1 DCN all-gather steps of
/// the 1/(N S) shard, then the ICI all-gather.
GroupPlan hierarchical_plan(const Machine& m, const GroupPlan* reduce_scatter,
                            const GroupPlan* all_gather, const std::vector<int>& members,
                            int slices);

}  // namespace tpusim
