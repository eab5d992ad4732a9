#pragma once
// The collective cost model: the one place that says what a collective step costs, from its plan.
//   - step_work: what one step of a plan's phase asks of each member (bytes per stream, bytes
//     summed, HBM bytes, vector time); the CollectiveEngine books exactly this on the cores'
//     resources and sends it over the network when it plays the step;
//   - predicted_time: the alpha-beta time of a plan from that work, which `auto` compares;
//   - predicted_time of an algorithm's bound_plan (its phases with link floors, no routes) is
//     a lower bound of its plan's, so `auto` skips plans that cannot win;
//   - crossing_per_byte (what a collective carries across a cut, the
//     layout search's bisection bound in tools/plan/bounds.cpp).
#include <utility>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "core/units.hpp"
#include "models/program.hpp"
#include "sim/collectives/collective_plan.hpp"

namespace tpusim {

struct CollectiveOptions {
  std::string algorithm = "auto";
  std::string all_to_all_algorithm = "auto";
  bool reduction_compute =
      true;  ///< false: summing received data is free (as in tools that ignore it)
  bool dma_hbm_traffic = true;  ///< false: the DMA engines' HBM reads and writes are free
  /// A reduce-scatter step sums what arrives as it streams in (not written to HBM first).
  bool reduce_on_arrival = true;
  /// Off the message level (0 there; SimOptions::from_config): the share of the step, of its
  /// compute ops' sum, that `auto` may give up over all collectives so that no collective's
  /// routes alone set the symmetric domain's extent (collectives.auto_resolution).
  double auto_resolution = 0;
  /// Multislice, parallelism.dcn_fsdp: of the slices, how many carry fsdp (a divisor of them;
  /// the data axis spans the rest, slices / dcn_fsdp: MaxText's hybrid mesh). Every all-gather
  /// and reduce-scatter over "fsdp" also spans a group of dcn_fsdp slices, an all-reduce over
  /// "data" the slices / dcn_fsdp slices holding the same shard (hierarchical_plan).
  int dcn_fsdp = 1;
  /// Multislice with parallelism.dcn_pipeline: the slices carry pipeline stages, not data. The
  /// collective-permutes over "pipeline" send from the stages at the slice's ends to the next
  /// (previous) slice over the DCN; no collective over "data" spans the slices.
  bool pipeline_across_slices = false;
  static CollectiveOptions from_config(const Config& cfg);
};

/// What one step of a phase asks of each member of a collective of `bytes`.
struct StepWork {
  double per_member = 0;  ///< bytes of the buffer a member sends per step (both ways together)
  double each_way = 0;    ///< bytes of one stream: half of per_member on a bidirectional ring
  double summed = 0;      ///< bytes a member sums per step (reduce-scatter steps), else 0
};

class CollectiveCostModel {
 public:
  CollectiveCostModel(const HardwareSpec& hw, const CollectiveOptions& options)
      : hw_(hw), options_(options) {}

  StepWork step_work(const PlanPhase& phase, double bytes) const;
  /// A member's HBM bytes in one step when it sends (and receives) `sent` bytes and sums
  /// `summed` of them: its DMA streams' reads and writes and the reduction's.
  double step_hbm_bytes(double sent, double summed) const;
  /// step_hbm_bytes as the bytes read from HBM and those written into it (the memory's
  /// statistics; the time comes from step_hbm_bytes).
  std::pair<double, double> step_hbm_read_written(double sent, double summed) const;
  /// The reduction of `summed` bytes: its vector time, and its HBM bytes (read the local
  /// operand, write the sum, and read back what arrived unless reduce_on_arrival); zero without
  /// collectives.reduction_compute.
  Duration reduction_vpu(double summed, DType dtype) const;
  double reduction_hbm_bytes(double summed) const;
  /// HBM latencies one step's reduction waits after its HBM work: one if it touches HBM.
  int reduction_hbm_latencies(double summed) const { return reduction_hbm_bytes(summed) > 0; }

  /// One step of `phase` alone: the bytes of one stream on the phase's busiest link plus its
  /// longest path latency, or a member's HBM and vector work if longer, plus the step overhead.
  Duration step_time(const PlanPhase& phase, double bytes, DType dtype) const;
  /// The alpha-beta time `auto` compares: per phase, steps x step_time. The link sharing of the
  /// phase's own traffic and of the same collective's other groups counts (profile_plans);
  /// other collectives' traffic does not.
  Duration predicted_time(const GroupPlan& plan, double bytes, DType dtype) const;
  /// The slowest of the plans of one collective's groups.
  Duration predicted_time(const std::vector<const GroupPlan*>& plans, double bytes,
                          DType dtype) const;

 private:
  const HardwareSpec& hw_;
  const CollectiveOptions options_;
};

/// Sums over the groups of one collective with members on both sides of a cut, per byte of a
/// member's buffer: N members, n_A on side A, n_B on side B.
struct CutShares {
  double straddling = 0;  ///< groups with members on both sides
  double a_over_n = 0;    ///< sum of n_A / N over straddling groups
  double b_over_n = 0;    ///< sum of n_B / N
  double ab_over_n = 0;   ///< sum of n_A n_B / N
};
/// Bytes a collective must carry across the cut per byte of a member's buffer, {A to B, B to A},
/// whatever its algorithm: an all-reduce's groups each send a whole buffer both ways, a
/// reduce-scatter's members on A need B's shares of their pieces, and so on.
std::pair<double, double> crossing_per_byte(CollectiveKind kind, const CutShares& s);

}  // namespace tpusim
