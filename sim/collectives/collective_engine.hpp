#pragma once
// Execution of collectives: the plans come from the CollectivePlanner (planning and algorithm
// choice, before the run); a group starts when all its members have arrived, then runs its plan's
// phases; every ring of a phase steps independently; a step's streams (one per route) are
// carried by the sending cores' DMA engines, in waves of at most the engines a core has, each
// wave one batch over the network; the streams read what is sent from HBM and write what
// arrives into it, and a reduce-scatter step also costs the receivers vector-unit and HBM time
// to sum what came. That work (the cost model's StepWork) is booked on each member's core
// resources (CoreResources, step_booking.cpp), where it contends with the core's compute.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "models/program.hpp"
#include "sim/collectives/collective_planner.hpp"
#include "sim/collectives/cost_model.hpp"
#include "sim/core/core_ports.hpp"
#include "sim/kernel/event_queue.hpp"
#include "sim/kernel/pool.hpp"
#include "sim/network/network.hpp"
#include "topologies/device_mesh.hpp"

namespace tpusim {

class Machine;
class CoreResources;
struct SymmetricRun;

/// Told when a core's part in a collective is over; lends the cores' resources to the steps.
class CollectiveListener {
 public:
  virtual ~CollectiveListener() = default;
  virtual void collective_done(int core, int op_index) = 0;
  virtual CoreResources& resources(int core) = 0;
};

/// Where one core's time inside collectives went, summed over the run.
struct CommSplit {
  Duration waiting;          ///< from its arrival until the last member of its group arrived
  Duration transfer;         ///< moving and reducing data (group start to end, less sync)
  Duration synchronisation;  ///< the fixed cost of every step (collective_step_overhead)
  /// Multislice: time in which at least one of its collectives was in a phase over the
  /// data-center network (part of transfer and synchronisation).
  Duration dcn;
};

class CollectiveEngine final : public CollectivePort, private EventTarget {
 public:
  CollectiveEngine(const Program& program, const DeviceMesh& mesh, Machine& machine,
                   Network& network, EventQueue& queue, const CollectiveOptions& options,
                   CollectiveListener& listener);
  ~CollectiveEngine();

  /// Plans every collective of the program for every group before the simulation starts, so a
  /// group an algorithm cannot serve is a ConfigError up front, not a failure mid-run.
  void prepare() { planner_.prepare(stats_); }

  /// Core `core` reaches collective op `op_index` now. A group whose last member this is
  /// starts from the event queue at this instant, after the cores running now (start_ready).
  void arrive(int op_index, int core) override;

  const std::map<int, CollectiveOpStats>& stats() const { return stats_; }
  const CommSplit& split(int core) const { return split_[core]; }

  const CollectiveCostModel& cost_model() const { return model_; }
  const CollectivePlanner& planner() const { return planner_; }
  /// Plays only the groups, members and sends of `run`'s domain (symmetry.hpp); set after
  /// prepare(), before the simulation starts. After the run, expand_symmetric_stats() gives
  /// each op the group count of the whole machine.
  void use_symmetry(const SymmetricRun* run) { symmetric_ = run; }
  void expand_symmetric_stats();
  /// Cores that arrived at an unfinished collective, for the watchdog: "op 12 (name): k of n".
  std::vector<std::string> waiting() const;

 private:
  struct Running;    // one group playing its plan
  struct OpState;    // arrivals per group of one collective op
  struct StepWaves;  // one ring's step in flight, its streams issued in waves

  void start_group(int op_index, int group, const GroupSet& gs);
  /// A group's members that the run simulates (`members` itself without symmetry, else those in
  /// the domain, in order), found once per group: a symmetric run's groups may span far more
  /// cores than its domain holds.
  const std::vector<int>& active_members(const std::vector<int>& members);
  /// Starts the groups that became ready at this instant, after the cores running now, in
  /// (op, group) order: not in the order the kernel happens to run their last members, so where
  /// groups share links or a core's HBM port, who goes first is the same in a symmetric run as
  /// in the full one, and a core's own compute at this instant is booked before the step work
  /// of a group it completed.
  void start_ready();
  /// The engine's events: the groups ready at an instant start, a group's first phase after its
  /// launch (arg: its record), a step's next wave (arg: the step's record), steps waiting for DMA
  /// engines retry, a step ends (arg: the step's record).
  enum Kind : std::uint32_t { kStartReady, kRunPhase, kNextWave, kRetryDma, kStepEnd };
  void on_event(std::uint32_t kind, std::uint64_t arg) override;
  void run_phase(PoolIndex run);
  void run_step(PoolIndex run, std::size_t ring, int step);
  /// Issues the step's next wave of streams if every member core has the DMA engines for it,
  /// else queues it until engines are freed.
  void issue_wave(PoolIndex wave);
  /// The network's report that the wave's last stream has arrived.
  void wave_arrived(PoolIndex wave, Duration arrival);
  void retry_dma_waiting();
  /// Releases the group's record and reports it done to its members.
  void finish_group(PoolIndex run);
  /// A phase over the data-center network begins (+1) or ends (-1) for the group's members.
  void count_dcn(const Running& run, int delta);
  /// Books a step's work on every member's core resources from `start`: its streams' HBM
  /// traffic and the reduction of what it receives, for `steps` coalesced steps; returns when
  /// the last member is through (step_booking.cpp).
  Duration book_step(int op_index, const Ring& ring, const StepWork& work, int steps, DType dtype,
                     Duration start);
  /// The DMA engines of the wave's sending cores: true (and issued) if every one has enough
  /// free, else false and nothing issued (step_booking.cpp).
  bool issue_dma(const std::vector<std::pair<int, int>>& cores, Duration queued, Duration now);

  const Program& program_;
  Machine& machine_;
  Network& network_;
  EventQueue& queue_;
  CollectiveListener& listener_;
  const HardwareSpec& hw_;
  CollectiveCostModel model_;
  CollectivePlanner planner_;
  std::map<int, std::unique_ptr<OpState>> pending_;
  std::vector<std::unique_ptr<OpState>> spare_states_;  ///< finished ops' records, for reuse
  std::map<int, CollectiveOpStats> stats_;
  std::vector<CommSplit> split_;        ///< per core
  std::vector<int> dcn_depth_;          ///< per core: its groups in a DCN phase now
  std::vector<Duration> dcn_since_;     ///< per core: since when dcn_depth_ is above 0
  std::vector<Transfer> batch_;         ///< reused by every step (the network copies what it keeps)
  std::vector<int> stream_count_;       ///< per core, scratch of issue_wave
  std::vector<PoolIndex> dma_waiting_;  ///< steps waiting for DMA engines
  Pool<Running> runs_;                  ///< groups playing their plans
  Pool<StepWaves> waves_;               ///< ring steps in flight
  const SymmetricRun* symmetric_ = nullptr;
  std::vector<std::pair<int, int>> ready_;  ///< (op, group) ready at this instant, not started
  /// active_members, by the address of a group's members (the planner's group sets live as
  /// long as the engine).
  std::unordered_map<const std::vector<int>*, std::unique_ptr<std::vector<int>>> active_of_;
};

}  // namespace tpusim
