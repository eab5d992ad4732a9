#pragma once
// A collective on one group of cores, as phases of point-to-point steps. Algorithms build plans;
// the engine plays them on the network.
#include <vector>

#include "models/program.hpp"
#include "sim/network.hpp"

namespace tpusim {

/// Members in ring order, with the routes to the next (and previous) member.
struct Ring {
  std::vector<int> members;
  std::vector<Route> next;  ///< members[i] -> its successor (empty route: sends nothing)
  std::vector<Route> prev;  ///< members[i] -> its predecessor (bidirectional rings only)
  Duration path_latency;    ///< the longest route's summed hop latencies
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
  std::vector<Ring> rings;  ///< independent rings progressing in parallel
};

struct GroupPlan {
  std::vector<PlanPhase> phases;
};

class Machine;

/// Builds a ring over `order` (cores); `closed` joins the last member to the first.
Ring make_ring(const Machine& m, const std::vector<int>& order, bool bidirectional,
               bool closed = true);

/// Reduce-scatter and all-gather phases over rings, by kind:
/// all-reduce = RS phases in order then AG phases in reverse; reduce-scatter = RS phases;
/// all-gather = AG phases in reverse. Each entry of `dims` is one dimension's set of rings.
struct DimRings {
  std::vector<std::vector<int>> rings;  ///< each ring's members in ring order
  bool bidirectional = false;
};
GroupPlan ring_phases(const Machine& m, CollectiveKind kind, const std::vector<DimRings>& dims);

}  // namespace tpusim
