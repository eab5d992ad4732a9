#pragma once
// A TensorCore playing the SPMD Program. One SC_METHOD per core, woken when a run of compute
// ends or a collective it waits for completes. Consecutive compute ops whose inputs are ready
// are settled in one wait: each op is granted its MXU and vector-unit time by the core's
// resources (CoreResources) and its memory traffic by its memory, one b_transport through the DMA
// engines' TLM socket, at once, so kernel events grow with communication points, not with ops or
// cycles. That is temporal decoupling: through a run the core runs ahead of the kernel by its
// local time (a tlm_quantumkeeper) and synchronises at the run's end, by notifying its own event
// (an SC_METHOD cannot wait). The run is the quantum: tpusim sets no global quantum. Collectives
// are issued as soon as their inputs exist; their steps take HBM and vector time from the same
// resources; an op that needs a collective's result waits for it. With async collectives, a
// collective whose inputs are other collectives' results (a gradient bucket's all-reduce after its
// reduce-scatter) does not hold the core: it is passed and starts when those results arrive, as
// XLA's scheduler places its start after their done.
#include <systemc>
#include <vector>

// After <systemc>: the keeper's header uses the kernel without including it.
#include <tlm_utils/tlm_quantumkeeper.h>

#include "core/hardware.hpp"
#include "core/units.hpp"
#include "models/program.hpp"
#include "sim/core/core_ports.hpp"
#include "sim/core/core_resources.hpp"
#include "sim/core/memory.hpp"
#include "sim/kernel/stats.hpp"

namespace tpusim {

class TimelineSink;

/// What every core shares: the Program and its per-op compute times.
struct ExecutionContext {
  const Program* program = nullptr;
  const HardwareSpec* hardware = nullptr;
  std::vector<Duration> op_time;    ///< per op, uncontended; zero for collectives
  std::vector<OpDemand> op_demand;  ///< per op: what it asks of MXUs, vector unit and HBM
  /// Per op: the longest any core waited, with nothing to run, for the op's inputs (a
  /// collective, an infeed batch) before it could start; the op profile's "waiting". Sized by
  /// whoever fills the context (empty: not recorded); the cores write it.
  mutable std::vector<Duration> op_waited;
  CollectivePort* engine = nullptr;
  /// false: a core waits for each collective it issues before doing anything else (the core
  /// drives its collectives itself); true: it computes while collectives are in flight.
  bool async_collectives = true;
  TimelineSink* timeline = nullptr;
  /// With hosts (sim/machine/host.hpp): per op the infeed batch it dequeues (-1: none). An infeed
  /// op is ready only once its batch is in the core's queue.
  InfeedPort* infeed = nullptr;
  const std::vector<int>* infeed_batch = nullptr;
  /// Makes each core's memory model (sim/core/memory.hpp); null: the built-in HBM port.
  const MemoryFactory* memory = nullptr;
  /// Makes each core's CMEM model where the chip has CMEM; null: the built-in.
  const MemoryFactory* cmem = nullptr;
  /// Makes each core's vector memory (VMEM) model; null: the built-in, which takes no time.
  const MemoryFactory* vmem = nullptr;
  /// The DMA engines reach the built-in memories and ICI port directly (SimOptions::direct_access).
  bool direct_access = true;
  /// Per op: one past its latest input (0: none), and its inputs that are collectives
  /// (collective_deps[collective_dep_begin[op], collective_dep_begin[op + 1])), so that a core
  /// asks whether an op is ready without walking the Program's ops (index_dependencies()).
  std::vector<int> dep_end, collective_dep_begin, collective_deps;
  /// Fills dep_end and the collective inputs from `program`.
  void index_dependencies();
};

class TensorCore : public sc_core::sc_module, public StatGroup {
 public:
  SC_HAS_PROCESS(TensorCore);
  /// `compute_scale` multiplies every compute op's time on this core (1 for a healthy core).
  TensorCore(sc_core::sc_module_name name, int id, const ExecutionContext& ctx, bool traced,
             double compute_scale = 1.0);

  /// The collective `op_index` is over for this core.
  void collective_done(int op_index);
  /// Something the core may wait for (an infeed batch) is there: look again.
  void wake() { wake_.notify(sc_core::SC_ZERO_TIME); }

  bool finished() const { return finished_; }
  int pc() const { return pc_; }
  Duration finish_time() const { return finish_time_; }
  Duration busy() const { return busy_; }           ///< computing
  Duration communicating() const { return comm_; }  ///< at least one collective in flight
  Duration exposed() const { return exposed_; }     ///< waiting on collectives, not computing
  /// Time compute runs took beyond their uncontended time because collective steps held the
  /// core's HBM port or vector unit.
  Duration compute_slowdown() const { return slowdown_; }
  std::uint64_t activations() const { return activations_; }
  CoreResources& resources() { return resources_; }
  const std::vector<int>& outstanding() const { return outstanding_; }
  /// When each outstanding collective was issued (parallel to outstanding(): same size).
  const std::vector<Duration>& issued_at() const { return issued_at_; }

 private:
  void guarded_step();
  void step();
  bool ready(int op_index) const;
  int infeed_batch(int op_index) const { return ctx_.infeed ? (*ctx_.infeed_batch)[op_index] : -1; }
  bool in_flight(int op_index) const;
  /// True if collective `op_index` waits only for collectives in flight (async collectives).
  bool waits_on_collectives_only(int op_index) const;
  /// Hands the deferred collectives whose inputs have arrived to the engine.
  void issue_deferred(Duration now);
  Duration op_duration(int op_index) const;
  void account(Duration now);
  void trace_run(Duration start, int from) const;
  /// Starts a run of compute ops at `now`: returns its end (in local time ahead of `now`).
  Duration run(Duration now);
  void register_stats();
  /// The core cannot start op `op_index` at `now`: its wait begins (if it has not already).
  void blocked_at(int op_index, Duration now);
  /// Op `op_index` starts at `now`: a wait for it ends (ExecutionContext::op_waited).
  void starts(int op_index, Duration now);

  const int id_;
  const ExecutionContext& ctx_;
  const bool traced_;
  const double compute_scale_;
  CoreResources resources_;
  std::vector<Duration> run_ends_;        ///< per op of the current run, when traced
  tlm_utils::tlm_quantumkeeper quantum_;  ///< local time ahead of the kernel within a run
  MemoryAccess access_;                   ///< the HBM access of the op being run (its bytes)
  MemoryAccess cmem_access_;              ///< its CMEM access
  MemoryAccess vmem_access_;              ///< its vector-memory access (what the HBM one moves)
  sc_core::sc_event wake_;
  int pc_ = 0;
  bool running_ = false;
  Duration run_end_;
  std::vector<int> outstanding_;     ///< issued collectives not yet done (few)
  std::vector<Duration> issued_at_;  ///< parallel to outstanding_, for the timeline
  /// With async collectives: collectives the core has passed whose inputs are other collectives
  /// still in flight; they count as outstanding and go to the engine when those arrive.
  std::vector<int> deferred_;
  bool finished_ = false;
  Duration finish_time_;
  Duration last_account_;
  int blocked_op_ = -1;  ///< the op the core waits to start (-1: none)
  Duration blocked_since_;
  Duration busy_, comm_, exposed_, slowdown_;
  std::uint64_t activations_ = 0;
};

}  // namespace tpusim
