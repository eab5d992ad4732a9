#pragma once
// Plays collectives: a group starts when all its members have arrived, then runs its plan's
// phases; every ring of a phase steps independently; a step's streams (one per route) are
// carried by the sending cores' DMA engines, in waves of at most the engines a core has, each
// wave one batch over the network; the streams read what is sent from HBM and write what
// arrives into it, and a reduce-scatter step also costs the receivers vector-unit and HBM time
// to sum what came. That work is granted by each member's core resources (CoreResources), where
// it contends with the core's compute.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "models/program.hpp"
#include "sim/collectives/collective_algorithm.hpp"
#include "sim/kernel/event_queue.hpp"
#include "sim/network/network.hpp"
#include "topologies/device_mesh.hpp"

namespace tpusim {

class Machine;
class CoreResources;

struct CollectiveOptions {
  std::string algorithm = "auto";
  std::string all_to_all_algorithm = "auto";
  bool reduction_compute =
      true;  ///< false: summing received data is free (as in tools that ignore it)
  bool dma_hbm_traffic = true;  ///< false: the DMA engines' HBM reads and writes are free
  /// A reduce-scatter step sums what arrives as it streams in (not written to HBM first).
  bool reduce_on_arrival = true;
  static CollectiveOptions from_config(const Config& cfg);
};

/// Told when a core's part in a collective is over; lends the cores' resources to the steps.
class CollectiveListener {
 public:
  virtual ~CollectiveListener() = default;
  virtual void collective_done(int core, int op_index) = 0;
  virtual CoreResources& resources(int core) = 0;
};

struct CollectiveOpStats {
  std::string algorithm;
  Duration first_start;  ///< earliest group start
  Duration last_end;     ///< latest group end
  Duration longest;      ///< longest single group
  int groups = 0;
  int steps = 0;  ///< steps of one group's plan
};

/// Where one core's time inside collectives went, summed over the run.
struct CommSplit {
  Duration waiting;          ///< from its arrival until the last member of its group arrived
  Duration transfer;         ///< moving and reducing data (group start to end, less sync)
  Duration synchronisation;  ///< the fixed cost of every step (collective_step_overhead)
};

class CollectiveEngine {
 public:
  CollectiveEngine(const Program& program, const DeviceMesh& mesh, Machine& machine,
                   Network& network, EventQueue& queue, const CollectiveOptions& options,
                   CollectiveListener& listener);
  ~CollectiveEngine();

  /// Plans every collective of the program for every group before the simulation starts, so a
  /// group an algorithm cannot serve is a ConfigError up front, not a failure mid-run.
  void prepare();

  /// Core `core` reaches collective op `op_index` now.
  void arrive(int op_index, int core);

  const std::map<int, CollectiveOpStats>& stats() const { return stats_; }
  const CommSplit& split(int core) const { return split_[core]; }

  /// The alpha-beta time `auto` compares: per phase, steps x (the bytes of one step on its
  /// busiest link + the longest path latency, or the reduction if longer, + the step overhead).
  /// The link sharing of the phase's own traffic and of the same collective's other groups
  /// counts; other collectives' traffic does not.
  Duration predicted_time(const GroupPlan& plan, double bytes, DType dtype) const;
  /// Cores that arrived at an unfinished collective, for the watchdog: "op 12 (name): k of n".
  std::vector<std::string> waiting() const;

 private:
  struct GroupSet;   // the groups of one axes set, with each core's group index
  struct Running;    // one group playing its plan
  struct OpState;    // arrivals per group of one collective op
  struct StepWaves;  // one ring's step in flight, its streams issued in waves

  const GroupSet& groups_for(const CollectiveSpec& spec);
  /// Chooses the algorithm of op `op_index` (one for all its groups) and returns the plans.
  const std::vector<const GroupPlan*>& plans_for(int op_index, const GroupSet& gs);
  /// The plans of `algorithm` for every group of `gs`, built once and profiled together (the
  /// groups of one collective run at the same time and share links); null if the algorithm
  /// cannot serve some group and `optional` (else its ConfigError propagates).
  const std::vector<const GroupPlan*>* cached_plans(const CollectiveSpec& spec, const GroupSet& gs,
                                                    const std::string& algorithm, bool optional);
  void start_group(int op_index, int group, const GroupSet& gs);
  void run_phase(const std::shared_ptr<Running>& run);
  void run_step(const std::shared_ptr<Running>& run, std::size_t ring, int step);
  /// Issues the step's next wave of streams if every member core has the DMA engines for it,
  /// else queues it until engines are freed.
  void issue_wave(const std::shared_ptr<StepWaves>& sw);
  void retry_dma_waiting();
  void finish_group(const std::shared_ptr<Running>& run);
  /// Per step and member: the reduction's vector time and its HBM bytes (read the local
  /// operand, write the sum, and read back what arrived unless reduce_on_arrival), zero unless a
  /// reduce-scatter step with collectives.reduction_compute.
  Duration reduction_vpu(double bytes, DType dtype) const;
  double reduction_hbm_bytes(double bytes) const;
  /// A member's HBM bytes in one step when it sends (and receives) `sent` bytes and sums
  /// `summed` of them: its DMA streams' reads and writes and the reduction's.
  double step_hbm_bytes(double sent, double summed) const;

  const Program& program_;
  const DeviceMesh& mesh_;
  Machine& machine_;
  Network& network_;
  EventQueue& queue_;
  CollectiveOptions options_;
  CollectiveListener& listener_;
  const HardwareSpec& hw_;
  std::map<std::string, std::unique_ptr<GroupSet>> group_sets_;
  std::map<std::string, std::unique_ptr<CollectiveAlgorithm>> algorithms_;
  struct PlanSet {
    std::vector<std::unique_ptr<GroupPlan>> owned;  ///< per group
    std::vector<const GroupPlan*> plans;            ///< per group; empty: cannot serve
  };
  std::map<std::string, PlanSet> plans_;  ///< by plan key
  std::vector<double> link_scratch_;      ///< for profile_plans
  std::map<int, std::unique_ptr<OpState>> pending_;
  /// Per op (prepared once): its group set and each group's plan.
  std::vector<const GroupSet*> op_groups_;
  std::vector<const std::vector<const GroupPlan*>*> op_plans_;
  std::map<int, CollectiveOpStats> stats_;
  std::vector<CommSplit> split_;   ///< per core
  std::vector<Transfer> batch_;    ///< reused by every step (the network copies what it keeps)
  std::vector<int> stream_count_;  ///< per core, scratch of issue_wave
  std::vector<std::shared_ptr<StepWaves>> dma_waiting_;  ///< steps waiting for DMA engines
};

}  // namespace tpusim
