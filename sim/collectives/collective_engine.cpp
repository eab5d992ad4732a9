#include "sim/collectives/collective_engine.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "core/errors.hpp"
#include "core/params.hpp"
#include "sim/core/core_resources.hpp"
#include "sim/machine/machine.hpp"
#include "sim/core/tensor_core_cost.hpp"

namespace tpusim {
namespace {
using T = ParamType;
// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kParams{{
    {"collectives.algorithm", T::String, "", "auto", "all-reduce / reduce-scatter / all-gather algorithm: auto (per group and size, the one of least predicted time), ring, bidirectional_ring, per_dimension, onchip, recursive_doubling, halving_doubling, one_shot", -1e300, 1e300, {"auto", "ring", "bidirectional_ring", "per_dimension", "onchip", "recursive_doubling", "halving_doubling", "one_shot"}},
    {"collectives.all_to_all_algorithm", T::String, "", "auto", "all-to-all: direct (all pieces at once, contending for links), per_dimension (one exchange per grid dimension), auto (the one of least predicted time; direct only up to 512 members)", -1e300, 1e300, {"auto", "direct", "per_dimension"}},
    {"collectives.reduction_compute", T::Boolean, "", true, "summing received data costs vector-unit and HBM time (false: free, to compare with tools that ignore it)"},
    {"collectives.dma_hbm_traffic", T::Boolean, "", true, "the DMA engines read every byte a core sends from its HBM and write what it receives into it, sharing the HBM port with compute and reductions (false: free, to compare with tools that ignore it)"},
    {"collectives.reduce_on_arrival", T::Boolean, "", true, "a reduce-scatter step sums what arrives as it streams in from the DMA engines, so only the sum is written to HBM (3 passes of HBM per byte with the DMA read of what is sent); false: what arrives is written to HBM first and the reduction reads it back (5 passes)"},
}};
// clang-format on

std::string axes_key(const CollectiveSpec& s) {
  if (!s.replica_groups.empty())
    return "groups@" + std::to_string(reinterpret_cast<std::uintptr_t>(&s));
  std::string k;
  for (const auto& a : s.axes) k += a + ",";
  return k;
}
}  // namespace

CollectiveOptions CollectiveOptions::from_config(const Config& c) {
  CollectiveOptions o;
  o.algorithm = c.string("collectives.algorithm");
  o.all_to_all_algorithm = c.string("collectives.all_to_all_algorithm");
  o.reduction_compute = c.boolean("collectives.reduction_compute");
  o.dma_hbm_traffic = c.boolean("collectives.dma_hbm_traffic");
  o.reduce_on_arrival = c.boolean("collectives.reduce_on_arrival");
  return o;
}

struct CollectiveEngine::GroupSet {
  std::vector<std::vector<int>> groups;  ///< physical cores, mesh order
  std::vector<int> group_of_core;
};

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
  std::shared_ptr<Running> run;
  std::size_t ring_index = 0;
  int step = 0;
  int steps = 1;            ///< steps this message carries (coalesced) or 1
  double stream_bytes = 0;  ///< per stream
  Duration cores_done;      ///< every member's HBM and vector work through
  int wave = 0;
  int waves = 1;
  Duration queued;  ///< when the current wave began to wait for engines
};

CollectiveEngine::CollectiveEngine(const Program& program, const DeviceMesh& mesh, Machine& machine,
                                   Network& network, EventQueue& queue,
                                   const CollectiveOptions& options, CollectiveListener& listener)
    : program_(program),
      mesh_(mesh),
      machine_(machine),
      network_(network),
      queue_(queue),
      options_(options),
      listener_(listener),
      hw_(machine.hardware()),
      split_(machine.num_cores()) {
  if (options_.algorithm != "auto") make_algorithm(options_.algorithm, "collectives.algorithm");
}

namespace {
/// Groups up to this size try the direct all-to-all under auto: its plan holds n (n-1) routes.
constexpr std::size_t kAutoDirectAllToAllMembers = 512;
/// Under auto, ties go to the earlier name (the algorithms used before auto compared times).
const std::vector<std::string> kPreference = {"per_dimension", "bidirectional_ring", "ring"};
}  // namespace

CollectiveEngine::~CollectiveEngine() = default;

const CollectiveEngine::GroupSet& CollectiveEngine::groups_for(const CollectiveSpec& spec) {
  const std::string key = axes_key(spec);
  auto& slot = group_sets_[key];
  if (slot) return *slot;
  slot = std::make_unique<GroupSet>();
  if (spec.replica_groups.empty()) {
    slot->groups = mesh_.groups(spec.axes);
  } else {
    for (const auto& g : spec.replica_groups) {
      std::vector<int> cores;
      for (int d : g) cores.push_back(mesh_.physical_core(d));
      slot->groups.push_back(std::move(cores));
    }
  }
  slot->group_of_core.assign(machine_.num_cores(), -1);
  for (std::size_t g = 0; g < slot->groups.size(); ++g)
    for (int core : slot->groups[g]) slot->group_of_core[core] = static_cast<int>(g);
  return *slot;
}

const std::vector<const GroupPlan*>* CollectiveEngine::cached_plans(const CollectiveSpec& spec,
                                                                    const GroupSet& gs,
                                                                    const std::string& algorithm,
                                                                    bool optional) {
  const std::string key = axes_key(spec) + "|" + to_string(spec.kind) + "|" + algorithm + "|" +
                          std::to_string(spec.shift) + (spec.wrap ? "w" : "");
  auto found = plans_.find(key);
  // A failure seen before is rebuilt when it must be reported, to throw its own error.
  if (found != plans_.end() && (!found->second.plans.empty() || optional))
    return found->second.plans.empty() ? nullptr : &found->second.plans;
  PlanSet& set = plans_[key];
  try {
    for (const auto& members : gs.groups) {
      auto plan = std::make_unique<GroupPlan>();
      if (spec.kind == CollectiveKind::CollectivePermute) {
        *plan = permute_plan(machine_, members, spec.shift, spec.wrap);
      } else if (spec.kind == CollectiveKind::AllToAll) {
        *plan = all_to_all_plan(machine_, members, algorithm);
      } else {
        auto& algo = algorithms_[algorithm];
        if (!algo) algo = make_algorithm(algorithm, "collectives.algorithm");
        *plan = algo->plan(machine_, spec.kind, members);
      }
      set.owned.push_back(std::move(plan));
    }
  } catch (const ConfigError&) {
    set.owned.clear();
    if (!optional) throw;
    return nullptr;
  }
  std::vector<GroupPlan*> all;
  for (auto& p : set.owned) {
    all.push_back(p.get());
    set.plans.push_back(p.get());
  }
  profile_plans(machine_, all, link_scratch_);
  return &set.plans;
}

const std::vector<const GroupPlan*>& CollectiveEngine::plans_for(int op_index, const GroupSet& gs) {
  const CollectiveSpec& spec = program_.ops[op_index].collective;
  const auto& first = gs.groups.front();
  std::string configured = "direct";
  std::vector<std::string> candidates;
  if (spec.kind == CollectiveKind::AllToAll) {
    configured = options_.all_to_all_algorithm;
    for (const auto& name : all_to_all_names())
      if (name != "direct" || first.size() <= kAutoDirectAllToAllMembers)
        candidates.push_back(name);
  } else if (spec.kind != CollectiveKind::CollectivePermute) {
    configured = options_.algorithm;
    candidates = kPreference;
    for (const auto& name : algorithm_names())
      if (std::find(candidates.begin(), candidates.end(), name) == candidates.end())
        candidates.push_back(name);
  }
  std::string algorithm = configured;
  const std::vector<const GroupPlan*>* plans = nullptr;
  auto slowest_group = [&](const std::vector<const GroupPlan*>& ps) {
    Duration t;
    for (const GroupPlan* p : ps) t = max(t, predicted_time(*p, spec.bytes, spec.dtype));
    return t;
  };
  if (configured == "auto") {
    Duration best;
    for (const auto& name : candidates) {
      if (plans && spec.kind != CollectiveKind::AllToAll) {
        auto& algo = algorithms_[name];
        if (!algo) algo = make_algorithm(name, "collectives.algorithm");
        if (algo->lower_bound(machine_, spec.kind, first, spec.bytes) >= best) continue;
      }
      const auto* ps = cached_plans(spec, gs, name, true);
      if (!ps) continue;
      const Duration t = slowest_group(*ps);
      if (!plans || t < best) {
        plans = ps;
        best = t;
        algorithm = name;
      }
    }
    // None served: all-to-all falls back to direct (large non-grid groups); otherwise the first
    // candidate is built again to report why (e.g. failed links cut a group off).
    if (!plans)
      plans = cached_plans(
          spec, gs,
          algorithm = spec.kind == CollectiveKind::AllToAll ? "direct" : candidates.front(), false);
  } else {
    plans = cached_plans(spec, gs, algorithm, false);
  }
  auto& st = stats_[op_index];
  st.algorithm = algorithm;
  int steps = 0;
  for (const auto& p : plans->front()->phases) steps += p.steps;
  st.steps = steps;
  return *plans;
}

Duration CollectiveEngine::predicted_time(const GroupPlan& plan, double bytes, DType dtype) const {
  Duration total;
  for (const auto& p : plan.phases) {
    if (p.steps == 0 || bytes <= 0) continue;
    const double per_member = p.step_fraction * bytes;
    const double each_way = p.bidirectional ? per_member / 2 : per_member;
    const Duration transfer = Duration::seconds(each_way * p.link_s_per_byte) + p.path_latency;
    // A member's core: the DMA engines read what it sends and write what it receives (as much
    // as it sends), plus the reduction; uncontended by compute.
    const bool rs = p.kind == StepKind::ReduceScatter;
    const double summed = rs ? per_member * p.reduce_pieces : 0;
    const double hbm_bytes = step_hbm_bytes(per_member, summed);
    Duration core = (hw_.hbm_bandwidth_per_core * hw_.hbm_efficiency).time_for(hbm_bytes);
    if (reduction_hbm_bytes(summed) > 0) core += hw_.hbm_latency;
    core = max(core, reduction_vpu(summed, dtype));
    total += (max(transfer, core) + hw_.collective_step_overhead) * p.steps;
  }
  return total;
}

void CollectiveEngine::prepare() {
  op_groups_.assign(program_.ops.size(), nullptr);
  op_plans_.assign(program_.ops.size(), {});
  for (std::size_t i = 0; i < program_.ops.size(); ++i) {
    if (!program_.ops[i].is_collective) continue;
    const GroupSet& gs = groups_for(program_.ops[i].collective);
    op_groups_[i] = &gs;
    op_plans_[i] = &plans_for(static_cast<int>(i), gs);
  }
  // The plans `auto` built and did not choose are not needed any more.
  std::set<const std::vector<const GroupPlan*>*> used(op_plans_.begin(), op_plans_.end());
  for (auto it = plans_.begin(); it != plans_.end();)
    it = used.count(&it->second.plans) ? std::next(it) : plans_.erase(it);
}

void CollectiveEngine::arrive(int op_index, int core) {
  auto& state = pending_[op_index];
  if (!state) {
    state = std::make_unique<OpState>();
    state->set = op_groups_[op_index];
    state->arrived.assign(state->set->groups.size(), 0);
    state->arrived_at.assign(machine_.num_cores(), Duration{});
  }
  state->arrived_at[core] = sim_now();
  const int g = state->set->group_of_core[core];
  if (g < 0) {  // not in any explicit group: nothing to do for this core
    listener_.collective_done(core, op_index);
    return;
  }
  if (++state->arrived[g] == static_cast<int>(state->set->groups[g].size()))
    start_group(op_index, g, *state->set);
}

void CollectiveEngine::start_group(int op_index, int group, const GroupSet& gs) {
  auto run = std::make_shared<Running>();
  run->op_index = op_index;
  run->plan = (*op_plans_[op_index])[group];
  run->members = &gs.groups[group];
  run->bytes = program_.ops[op_index].collective.bytes;
  run->dtype = program_.ops[op_index].collective.dtype;
  run->started = sim_now();
  const OpState& state = *pending_[op_index];
  for (int core : *run->members) split_[core].waiting += run->started - state.arrived_at[core];
  auto& st = stats_[op_index];
  if (st.groups == 0 || run->started < st.first_start) st.first_start = run->started;
  ++st.groups;
  run_phase(run);
}

void CollectiveEngine::run_phase(const std::shared_ptr<Running>& run) {
  while (run->phase < run->plan->phases.size() &&
         (run->plan->phases[run->phase].steps == 0 || run->bytes <= 0))
    ++run->phase;
  if (run->phase >= run->plan->phases.size()) {
    finish_group(run);
    return;
  }
  const PlanPhase& phase = run->plan->phases[run->phase];
  run->rings_left = phase.rings.size();
  for (std::size_t r = 0; r < phase.rings.size(); ++r) run_step(run, r, 0);
}

void CollectiveEngine::run_step(const std::shared_ptr<Running>& run, std::size_t ring_index,
                                int step) {
  const PlanPhase& phase = run->plan->phases[run->phase];
  if (step == phase.steps) {
    if (--run->rings_left == 0) {
      ++run->phase;
      run_phase(run);
    }
    return;
  }
  const Ring& ring = phase.rings[ring_index];
  const double per_member = phase.step_fraction * run->bytes;
  const double each_way = phase.bidirectional ? per_member / 2 : per_member;
  // Coalesced (message level): the ring's remaining steps travel as one message per neighbour
  // pair; every step still pays its hop latency and synchronisation, in sequence.
  const int steps = network_.coalesces_steps() ? phase.steps - step : 1;
  if (ring_index == 0) run->steps_run += steps;
  const Duration start = sim_now();
  // Each member's core grants the step's work from now: its streams' HBM traffic (it sends as
  // much as it receives: the step's bytes over the members) and the reduction of what it
  // receives.
  double sent = 0;
  for (const auto* routes : {&ring.next, &ring.prev})
    for (const auto& r : *routes)
      if (!r.empty()) sent += each_way * steps;
  const double summed =
      phase.kind == StepKind::ReduceScatter ? per_member * phase.reduce_pieces : 0;
  const double hbm_bytes =
      step_hbm_bytes(sent / static_cast<double>(ring.members.size()), summed * steps);
  const Duration vpu = reduction_vpu(summed, run->dtype) * steps;
  const int latencies = reduction_hbm_bytes(summed) > 0 ? steps : 0;
  Duration cores_done = start;
  for (int core : ring.members)
    cores_done =
        max(cores_done, listener_.resources(core).communicate(start, hbm_bytes, vpu, latencies));
  auto sw = std::make_shared<StepWaves>();
  sw->run = run;
  sw->ring_index = ring_index;
  sw->step = step;
  sw->steps = steps;
  sw->stream_bytes = each_way * steps;
  sw->cores_done = cores_done;
  sw->queued = start;
  issue_wave(sw);
}

void CollectiveEngine::issue_wave(const std::shared_ptr<StepWaves>& sw) {
  const Running& run = *sw->run;
  const Ring& ring = run.plan->phases[run.phase].rings[sw->ring_index];
  const int engines = hw_.dma_engines_per_core;
  const int lo = engines > 0 ? sw->wave * engines : 0;
  const int hi = engines > 0 ? lo + engines : std::numeric_limits<int>::max();
  // The wave's streams in the order the ring lists its routes (the message level reserves links
  // in this order): the k-th stream of each sending core for lo <= k < hi.
  if (stream_count_.size() < static_cast<std::size_t>(machine_.num_cores()))
    stream_count_.assign(machine_.num_cores(), 0);
  batch_.clear();
  auto add = [&](const Route& r, int sender) {
    const int k = stream_count_[sender]++;
    if (k >= lo && k < hi) batch_.push_back({&r, sw->stream_bytes});
  };
  for (std::size_t k = 0; k < ring.next.size(); ++k)
    if (!ring.next[k].empty())
      add(ring.next[k], ring.next_from.empty() ? ring.members[k] : ring.next_from[k]);
  for (std::size_t k = 0; k < ring.prev.size(); ++k)
    if (!ring.prev[k].empty()) add(ring.prev[k], ring.members[k]);
  // How many streams each member issues in this wave (senders are members).
  std::vector<std::pair<int, int>> cores;
  int most = 0;
  for (int core : ring.members) {
    const int n = std::min(stream_count_[core], hi) - lo;
    if (n > 0) cores.emplace_back(core, n);
    most = std::max(most, stream_count_[core]);
    stream_count_[core] = 0;
  }
  if (engines > 0 && sw->wave == 0) sw->waves = std::max(1, (most + engines - 1) / engines);
  const Duration now = sim_now();
  if (engines > 0)
    for (const auto& [core, n] : cores)
      if (!listener_.resources(core).dma.can_issue(n, now)) {
        dma_waiting_.push_back(sw);
        return;
      }
  for (const auto& [core, n] : cores) {
    DmaEngines& dma = listener_.resources(core).dma;
    if (now > sw->queued) dma.waited(now - sw->queued);
    dma.issue(n, now);
  }
  const Duration path_latency = ring.path_latency;
  network_.send_batch(batch_, [this, sw, path_latency, now,
                               cores = std::move(cores)](Duration arrival) {
    // Data moves and is summed as it streams in: the wave's streams are through when the
    // last has arrived (a coalesced message: after its further hops' latencies too).
    const Duration through = arrival + path_latency * (sw->steps - 1);
    for (const auto& [core, n] : cores) listener_.resources(core).dma.complete(n, now, through);
    const bool limited = hw_.dma_engines_per_core > 0;
    if (++sw->wave < sw->waves) {
      queue_.at(through, [this, sw] {
        sw->queued = sim_now();
        retry_dma_waiting();
        issue_wave(sw);
      });
      return;
    }
    if (limited) queue_.at(through, [this] { retry_dma_waiting(); });
    // The step ends when both the transfers and every member's HBM and vector work are
    // through, plus the fixed synchronisation cost.
    const Duration end = max(through, sw->cores_done) + hw_.collective_step_overhead * sw->steps;
    queue_.at(end, [this, sw] { run_step(sw->run, sw->ring_index, sw->step + sw->steps); });
  });
}

void CollectiveEngine::retry_dma_waiting() {
  // Steps that waited for engines, oldest first; those that still do not fit wait on.
  std::vector<std::shared_ptr<StepWaves>> waiting;
  waiting.swap(dma_waiting_);
  for (const auto& sw : waiting) issue_wave(sw);
}

void CollectiveEngine::finish_group(const std::shared_ptr<Running>& run) {
  const Duration now = sim_now();
  auto& st = stats_[run->op_index];
  st.last_end = max(st.last_end, now);
  st.longest = max(st.longest, now - run->started);
  const Duration sync = hw_.collective_step_overhead * run->steps_run;
  for (int core : *run->members) {
    split_[core].synchronisation += sync;
    split_[core].transfer += now - run->started - sync;
  }
  auto it = pending_.find(run->op_index);
  for (int core : *run->members) listener_.collective_done(core, run->op_index);
  if (it != pending_.end() &&
      ++it->second->groups_done == static_cast<int>(it->second->set->groups.size()))
    pending_.erase(it);
}

Duration CollectiveEngine::reduction_vpu(double bytes, DType dtype) const {
  if (!options_.reduction_compute || bytes <= 0) return Duration{};
  // One vector add per element.
  return hw_.cycles(vpu_cycles(hw_, bytes / dtype_bytes(dtype), 1.0));
}

double CollectiveEngine::step_hbm_bytes(double sent, double summed) const {
  // A member receives what it sends. Summed on arrival, the received bytes reach HBM only as
  // the reduction's write of the sum.
  const double dma =
      options_.dma_hbm_traffic
          ? DmaEngines::hbm_bytes(sent, sent, options_.reduce_on_arrival ? summed : 0)
          : 0;
  return dma + reduction_hbm_bytes(summed);
}

double CollectiveEngine::reduction_hbm_bytes(double bytes) const {
  // Sum into the local buffer: read the local operand and write the sum, and (unless summed on
  // arrival) read back the received operand from HBM too.
  if (!options_.reduction_compute || bytes <= 0) return 0;
  return (options_.reduce_on_arrival ? 2 : 3) * bytes;
}

std::vector<std::string> CollectiveEngine::waiting() const {
  std::vector<std::string> out;
  for (const auto& [op, state] : pending_) {
    for (std::size_t g = 0; g < state->arrived.size(); ++g) {
      const int n = static_cast<int>(state->set->groups[g].size());
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
