#include "sim/collectives/collective_engine.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "core/errors.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "models/parallelism/layout.hpp"
#include "sim/collectives/collective_algorithm.hpp"
#include "sim/collectives/symmetry.hpp"
#include "sim/core/core_resources.hpp"
#include "sim/core/ici_port.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {
namespace {
using T = ParamType;
// One parameter per line reads as a table.
// clang-format off
const Param<std::string> kCollectivesAlgorithm{{"collectives.algorithm", T::String, "", "auto", "all-reduce / reduce-scatter / all-gather algorithm: auto (per group and size, the one of least predicted time) or one of the registered algorithms (sim/collectives/algorithms/, docs/network.md)", -1e300, 1e300, {"auto"}, "", "", false, &algorithm_names}};
const Param<std::string> kCollectivesAllToAllAlgorithm{{"collectives.all_to_all_algorithm", T::String, "", "auto", "all-to-all: direct (all pieces at once, contending for links), per_dimension (one exchange per grid dimension), auto (the one of least predicted time; direct only up to 512 members)", -1e300, 1e300, {"auto"}, "", "", false, &all_to_all_names}};
const Param<bool> kCollectivesReductionCompute{{"collectives.reduction_compute", T::Boolean, "", true, "summing received data costs vector-unit and HBM time (false: free, to compare with tools that ignore it)"}};
const Param<bool> kCollectivesDmaHbmTraffic{{"collectives.dma_hbm_traffic", T::Boolean, "", true, "the DMA engines read every byte a core sends from its HBM and write what it receives into it, sharing the HBM port with compute and reductions (false: free, to compare with tools that ignore it)"}};
const Param<bool> kCollectivesReduceOnArrival{{"collectives.reduce_on_arrival", T::Boolean, "", true, "a reduce-scatter step sums what arrives as it streams in from the DMA engines, so only the sum is written to HBM (3 passes of HBM per byte with the DMA read of what is sent); false: what arrives is written to HBM first and the reduction reads it back (5 passes)"}};
const Param<double> kCollectivesAutoResolution{{"collectives.auto_resolution", T::Number, "", 0.005, "flow and packet levels, collectives.algorithm=auto: the cost model's resolution, as a share of the step's compute ops (their sum on one core, a lower bound of the step). A collective whose routes alone would set the symmetric domain's extent along a dimension takes another candidate whose routes do not, if the predicted time given up, over all such collectives, stays below it (docs/network.md, \"Tiny collectives and the domain\"); 0: always the fastest predicted. The default is half the 1 % by which the three network levels agree (a choice, not a measured figure)", 0, 0.05}};
// clang-format on

}  // namespace

CollectiveOptions CollectiveOptions::from_config(const Config& c) {
  CollectiveOptions o;
  o.algorithm = kCollectivesAlgorithm(c);
  o.all_to_all_algorithm = kCollectivesAllToAllAlgorithm(c);
  o.reduction_compute = kCollectivesReductionCompute(c);
  o.dma_hbm_traffic = kCollectivesDmaHbmTraffic(c);
  o.reduce_on_arrival = kCollectivesReduceOnArrival(c);
  o.auto_resolution = kCollectivesAutoResolution(c);
  o.dcn_fsdp = static_cast<int>(kParallelismDcnFsdp(c));
  o.pipeline_across_slices = kParallelismDcnPipeline(c) > 1;
  return o;
}

struct CollectiveEngine::OpState {
  std::vector<int> arrived;          ///< per group
  std::vector<Duration> arrived_at;  ///< per core: when it reached this op
  int groups_done = 0;
  const GroupSet* set = nullptr;
};

struct CollectiveEngine::Running {
  int op_index = 0;
  const GroupPlan* plan = nullptr;
  const std::vector<int>* members = nullptr;
  /// The members the run simulates: all of them, or in a symmetric run those in its domain
  /// (active_members), in the same order.
  const std::vector<int>* active = nullptr;
  double bytes = 0;
  DType dtype = DType::BF16;
  std::size_t phase = 0;
  std::size_t rings_left = 0;
  Duration started;
  int steps_run = 0;  ///< steps played so far (each pays the step overhead)
};

/// One ring's step in flight: its streams are issued in waves of at most the DMA engines of each
/// member core (one wave without a limit); the step ends after the last wave has arrived.
struct CollectiveEngine::StepWaves {
  PoolIndex run = kNoIndex;
  std::size_t ring_index = 0;
  int step = 0;
  int steps = 1;            ///< steps this message carries (coalesced) or 1
  double stream_bytes = 0;  ///< per stream
  Duration cores_done;      ///< every member's HBM and vector work through
  int wave = 0;
  int waves = 1;
  Duration queued;  ///< when the current wave began to wait for engines
  // The wave in flight: when it was issued, the ring's path latency, and how many streams each
  // sending core issued (their DMA engines are released when it has arrived).
  Duration issued;
  Duration path_latency;
  std::vector<std::pair<int, int>> cores;
};

void CollectiveEngine::on_event(std::uint32_t kind, std::uint64_t arg) {
  const auto index = static_cast<PoolIndex>(arg);
  switch (kind) {
    case kStartReady:
      start_ready();
      break;
    case kRunPhase:
      run_phase(index);
      break;
    case kNextWave:
      waves_[index].queued = sim_now();
      retry_dma_waiting();
      issue_wave(index);
      break;
    case kRetryDma:
      retry_dma_waiting();
      break;
    default: {  // kStepEnd
      const StepWaves& sw = waves_[index];
      const PoolIndex run = sw.run;
      const std::size_t ring = sw.ring_index;
      const int next = sw.step + sw.steps;
      waves_.give(index);
      run_step(run, ring, next);
    }
  }
}

CollectiveEngine::CollectiveEngine(const Program& program, const DeviceMesh& mesh, Machine& machine,
                                   Network& network, EventQueue& queue,
                                   const CollectiveOptions& options, CollectiveListener& listener)
    : program_(program),
      machine_(machine),
      network_(network),
      queue_(queue),
      listener_(listener),
      hw_(machine.hardware()),
      model_(machine.hardware(), options),
      planner_(program, mesh, machine, options, model_),
      split_(machine.num_cores()),
      dcn_depth_(machine.slices() > 1 ? machine.num_cores() : 0, 0),
      dcn_since_(dcn_depth_.size()) {}

CollectiveEngine::~CollectiveEngine() = default;

void CollectiveEngine::arrive(int op_index, int core) {
  auto& state = pending_[op_index];
  if (!state) {
    // A finished op's record, if any: its arrived_at is not cleared (a core's entry is written
    // when it arrives, before anything reads it), which spares a pass over every core of the
    // machine per collective op.
    if (spare_states_.empty()) {
      state = std::make_unique<OpState>();
      state->arrived_at.resize(static_cast<std::size_t>(machine_.num_cores()));
    } else {
      state = std::move(spare_states_.back());
      spare_states_.pop_back();
    }
    state->set = &planner_.groups(op_index);
    state->arrived.assign(state->set->groups.size(), 0);
    state->groups_done = 0;
  }
  state->arrived_at[core] = sim_now();
  const int g = state->set->group_of_core[core];
  if (g < 0) {  // not in any explicit group: nothing to do for this core
    listener_.collective_done(core, op_index);
    return;
  }
  const int members = symmetric_ ? symmetric_->ops[op_index]->active_members[g]
                                 : static_cast<int>(state->set->groups[g].size());
  if (++state->arrived[g] != members) return;
  ready_.emplace_back(op_index, g);
  if (ready_.size() == 1) queue_.at(sim_now(), *this, kStartReady);
}

void CollectiveEngine::start_ready() {
  std::vector<std::pair<int, int>> ready;
  ready.swap(ready_);
  std::sort(ready.begin(), ready.end());
  for (const auto& [op, g] : ready) start_group(op, g, *pending_[op]->set);
}

void CollectiveEngine::start_group(int op_index, int group, const GroupSet& gs) {
  const PoolIndex ri = runs_.take();
  Running& run = runs_[ri];
  run = Running{};
  run.op_index = op_index;
  run.plan = symmetric_ ? symmetric_->ops[op_index]->plans[group].get()
                        : &planner_.plan(op_index, static_cast<std::size_t>(group));
  run.members = &gs.groups[group];
  run.active = &active_members(*run.members);
  run.bytes = program_.ops[op_index].collective.bytes;
  run.dtype = program_.ops[op_index].collective.dtype;
  run.started = sim_now();
  const OpState& state = *pending_[op_index];
  for (int core : *run.active) split_[core].waiting += run.started - state.arrived_at[core];
  auto& st = stats_[op_index];
  if (st.groups == 0 || run.started < st.first_start) st.first_start = run.started;
  ++st.groups;
  // The op's fixed launch cost (hardware.calibration.collective_launch_ns) before its first step.
  if (hw_.collective_launch > Duration{})
    queue_.at(run.started + hw_.collective_launch, *this, kRunPhase, ri);
  else
    run_phase(ri);
}

const std::vector<int>& CollectiveEngine::active_members(const std::vector<int>& members) {
  if (!symmetric_) return members;
  auto& slot = active_of_[&members];
  if (!slot) {
    slot = std::make_unique<std::vector<int>>();
    for (int core : members)
      if (symmetric_->active[core]) slot->push_back(core);
  }
  return *slot;
}

void CollectiveEngine::run_phase(PoolIndex ri) {
  Running& run = runs_[ri];
  while (run.phase < run.plan->phases.size() &&
         (run.plan->phases[run.phase].steps == 0 || run.bytes <= 0))
    ++run.phase;
  if (run.phase >= run.plan->phases.size()) {
    finish_group(ri);
    return;
  }
  const PlanPhase& phase = run.plan->phases[run.phase];
  if (phase.dcn) count_dcn(run, +1);
  run.rings_left = phase.rings.size();
  for (std::size_t r = 0; r < phase.rings.size(); ++r) run_step(ri, r, 0);
}

void CollectiveEngine::run_step(PoolIndex ri, std::size_t ring_index, int step) {
  Running& run = runs_[ri];
  const PlanPhase& phase = run.plan->phases[run.phase];
  if (step == phase.steps) {
    if (--run.rings_left == 0) {
      if (phase.dcn) count_dcn(run, -1);
      ++run.phase;
      run_phase(ri);
    }
    return;
  }
  const Ring& ring = phase.rings[ring_index];
  const StepWork work = model_.step_work(phase, run.bytes);
  // Coalesced (message level): the ring's remaining steps travel as one message per neighbour
  // pair; every step still pays its hop latency and synchronisation, in sequence.
  const int steps = network_.coalesces_steps() ? phase.steps - step : 1;
  if (ring_index == 0) run.steps_run += steps;
  const Duration start = sim_now();
  const Duration cores_done = book_step(run.op_index, ring, work, steps, run.dtype, start);
  const PoolIndex w = waves_.take();
  StepWaves& sw = waves_[w];
  sw.run = ri;
  sw.ring_index = ring_index;
  sw.step = step;
  sw.steps = steps;
  sw.stream_bytes = work.each_way * steps;
  sw.cores_done = cores_done;
  sw.wave = 0;
  sw.waves = 1;
  sw.queued = start;
  issue_wave(w);
}

void CollectiveEngine::issue_wave(PoolIndex w) {
  StepWaves& sw = waves_[w];
  const Running& run = runs_[sw.run];
  const Ring& ring = run.plan->phases[run.phase].rings[sw.ring_index];
  const int engines = hw_.dma_engines_per_core;
  const int lo = engines > 0 ? sw.wave * engines : 0;
  const int hi = engines > 0 ? lo + engines : std::numeric_limits<int>::max();
  // The wave's streams in the order the ring lists its routes (the message level reserves links
  // in this order): the k-th stream of each sending core for lo <= k < hi.
  if (stream_count_.size() < static_cast<std::size_t>(machine_.num_cores()))
    stream_count_.assign(machine_.num_cores(), 0);
  batch_.clear();
  auto add = [&](const Route& r, int sender) {
    const int k = stream_count_[sender]++;
    if (k >= lo && k < hi) batch_.push_back({&r, sw.stream_bytes});
  };
  for (std::size_t k = 0; k < ring.next.size(); ++k)
    if (!ring.next[k].empty())
      add(ring.next[k], ring.next_from.empty() ? ring.members[k] : ring.next_from[k]);
  for (std::size_t k = 0; k < ring.prev.size(); ++k)
    if (!ring.prev[k].empty()) add(ring.prev[k], ring.members[k]);
  // How many streams each member issues in this wave (senders are members).
  sw.cores.clear();
  int most = 0;
  for (int core : ring.members) {
    const int n = std::min(stream_count_[core], hi) - lo;
    if (n > 0) sw.cores.emplace_back(core, n);
    most = std::max(most, stream_count_[core]);
    stream_count_[core] = 0;
  }
  if (engines > 0 && sw.wave == 0) sw.waves = std::max(1, (most + engines - 1) / engines);
  const Duration now = sim_now();
  if (!issue_dma(sw.cores, sw.queued, now)) {
    dma_waiting_.push_back(w);
    return;
  }
  sw.issued = now;
  sw.path_latency = ring.path_latency;
  network_.send_batch(batch_, [this, w](Duration arrival) { wave_arrived(w, arrival); });
}

void CollectiveEngine::wave_arrived(PoolIndex w, Duration arrival) {
  StepWaves& sw = waves_[w];
  // Data moves and is summed as it streams in: the wave's streams are through when the last
  // has arrived (a coalesced message: after its further hops' latencies too).
  Duration through = arrival + sw.path_latency * (sw.steps - 1);
  // What each sending core sent leaves it through its ICI port, one transaction annotated with
  // the network level's answer; the wave is through when the last port says so (the built-in
  // ports answer the network's time).
  IciTransfer transfer;
  transfer.issued = sw.issued;
  transfer.op = runs_[sw.run].op_index;
  const Duration answered = through;
  for (const auto& [core, n] : sw.cores) {
    transfer.bytes = sw.stream_bytes * n;
    transfer.streams = n;
    through = max(through, listener_.resources(core).dma.send(answered, transfer));
  }
  for (const auto& [core, n] : sw.cores)
    listener_.resources(core).dma.complete(n, sw.issued, through);
  const bool limited = hw_.dma_engines_per_core > 0;
  if (++sw.wave < sw.waves) {
    queue_.at(through, *this, kNextWave, w);
    return;
  }
  if (limited) queue_.at(through, *this, kRetryDma);
  // The step ends when both the transfers and every member's HBM and vector work are through,
  // plus the fixed synchronisation cost.
  const Duration end = max(through, sw.cores_done) + hw_.collective_step_overhead * sw.steps;
  queue_.at(end, *this, kStepEnd, w);
}

void CollectiveEngine::retry_dma_waiting() {
  // Steps that waited for engines, oldest first; those that still do not fit wait on.
  std::vector<PoolIndex> waiting;
  waiting.swap(dma_waiting_);
  for (const PoolIndex w : waiting) issue_wave(w);
}

void CollectiveEngine::count_dcn(const Running& run, int delta) {
  const Duration now = sim_now();
  for (int core : *run.active) {
    if (delta > 0 && dcn_depth_[core]++ == 0) dcn_since_[core] = now;
    if (delta < 0 && --dcn_depth_[core] == 0) split_[core].dcn += now - dcn_since_[core];
  }
}

void CollectiveEngine::finish_group(PoolIndex ri) {
  // Copied out and the record released first: collective_done may start more groups.
  const Running run = runs_[ri];
  runs_.give(ri);
  const Duration now = sim_now();
  auto& st = stats_[run.op_index];
  st.last_end = max(st.last_end, now);
  st.longest = max(st.longest, now - run.started);
  const Duration sync = hw_.collective_step_overhead * run.steps_run + hw_.collective_launch;
  const auto* played = symmetric_ ? symmetric_->ops[run.op_index] : nullptr;
  for (int core : *run.active) {
    split_[core].synchronisation += sync;
    split_[core].transfer += now - run.started - sync;
  }
  auto it = pending_.find(run.op_index);
  for (int core : *run.active) listener_.collective_done(core, run.op_index);
  const int groups =
      played ? played->played : static_cast<int>(planner_.groups(run.op_index).groups.size());
  if (it != pending_.end() && ++it->second->groups_done == groups) {
    spare_states_.push_back(std::move(it->second));
    pending_.erase(it);
  }
}

void CollectiveEngine::expand_symmetric_stats() {
  if (!symmetric_) return;
  for (auto& [op, st] : stats_)
    if (st.groups > 0) st.groups = static_cast<int>(planner_.groups(op).groups.size());
}

std::vector<std::string> CollectiveEngine::waiting() const {
  std::vector<std::string> out;
  for (const auto& [op, state] : pending_) {
    for (std::size_t g = 0; g < state->arrived.size(); ++g) {
      const int n = symmetric_ ? symmetric_->ops[op]->active_members[g]
                               : static_cast<int>(state->set->groups[g].size());
      if (state->arrived[g] > 0 && state->arrived[g] < n) {
        out.push_back("op " + std::to_string(op) + " (" + program_.ops[op].name + ", " +
                      to_string(program_.ops[op].collective.kind) + ") group " + std::to_string(g) +
                      ": " + std::to_string(state->arrived[g]) + " of " + std::to_string(n) +
                      " cores arrived");
        if (out.size() > 5) return out;
      }
    }
  }
  return out;
}

}  // namespace tpusim
