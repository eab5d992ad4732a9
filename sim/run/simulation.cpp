#include "sim/run/simulation.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <systemc>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "sim/collectives/collective_engine.hpp"
#include "sim/kernel/event_queue.hpp"
#include "sim/kernel/failure.hpp"
#include "sim/machine/machine.hpp"
#include "sim/core/tensor_core.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "sim/kernel/timeline.hpp"

namespace tpusim {
namespace {

bool g_simulated = false;  // SystemC allows one elaboration per process

/// The elaborated design outlives simulate(): SystemC allows one design per process anyway, and
/// its module registry removes modules in quadratic time, which for 8192 cores and 24k links
/// costs more than the simulation. The process exit reclaims it; the pointer keeps it reachable.
struct Design {
  std::unique_ptr<Machine> machine;
  std::unique_ptr<EventQueue> queue;
  std::vector<std::unique_ptr<TensorCore>> cores;
  std::unique_ptr<HostSet> hosts;
};
Design* g_design = nullptr;

class CoreDispatch : public CollectiveListener {
 public:
  std::vector<std::unique_ptr<TensorCore>>* cores = nullptr;
  void collective_done(int core, int op_index) override {
    (*cores)[core]->collective_done(op_index);
  }
  CoreResources& resources(int core) override { return (*cores)[core]->resources(); }
};

/// The busy intervals of a link of a traced chip.
struct LinkLog {
  int chip = -1;
  std::vector<std::pair<Duration, Duration>> intervals;
};

/// Utilisation of each logged link in fixed time bins, as timeline counters (0..1).
void emit_link_counters(TimelineSink& sink, const std::map<LinkModule*, LinkLog>& logs,
                        Duration step) {
  const int bins = 200;
  if (step <= Duration{}) return;
  const double bin_ps = static_cast<double>(step.ps()) / bins;
  // By chip and link name: the map's order is the links' addresses, which differ between runs
  // (a longer file name in the arguments moves the heap), and the timeline would with them.
  std::vector<std::pair<const LinkModule*, const LinkLog*>> ordered;
  for (const auto& [link, log] : logs) ordered.emplace_back(link, &log);
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    if (a.second->chip != b.second->chip) return a.second->chip < b.second->chip;
    return std::strcmp(a.first->basename(), b.first->basename()) < 0;
  });
  for (const auto& [link, log_ptr] : ordered) {
    const LinkLog& log = *log_ptr;
    std::vector<double> busy(bins, 0.0);
    for (const auto& [a, b] : log.intervals) {
      double s = static_cast<double>(a.ps()), e = static_cast<double>(b.ps());
      for (int k = std::max(0, static_cast<int>(s / bin_ps)); k < bins && k * bin_ps < e; ++k) {
        const double lo = std::max(s, k * bin_ps), hi = std::min(e, (k + 1) * bin_ps);
        if (hi > lo) busy[k] += hi - lo;
      }
    }
    for (int k = 0; k < bins; ++k)
      sink.counter(log.chip, link->basename(), "utilization",
                   Duration::ps(static_cast<std::int64_t>(k * bin_ps)),
                   std::min(1.0, busy[k] / bin_ps));
  }
}

}  // namespace

SimOptions SimOptions::from_config(const Config& cfg) {
  SimOptions o;
  o.network = NetworkOptions::from_config(cfg);
  o.collectives = CollectiveOptions::from_config(cfg);
  o.hosts = HostOptions::from_config(cfg);
  return o;
}

std::vector<Duration> compute_times(const Program& program, const HardwareSpec& hw,
                                    bool use_measured) {
  std::vector<Duration> t(program.ops.size());
  // A core runs every compute op once, so their sum bounds its compute time; checked here,
  // before anything is elaborated, against the kernel's range.
  double total_s = 0;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    if (op.is_collective) continue;
    if (use_measured && op.compute.measured_ns)
      t[i] = Duration::ns(*op.compute.measured_ns);
    else
      t[i] = compute_op_time(hw, op.compute).total;
    total_s += t[i].seconds();
  }
  const double slowest = hw.slow_chips.empty() ? 1.0 : std::max(1.0, hw.slow_chip_factor);
  if (total_s * slowest > kMaxSimulatedSeconds)
    throw ConfigError("workload",
                      "the compute ops of one step take " + format_number(total_s * slowest) +
                          " s on one core, " +
                          past_limit(kMaxSimulatedSeconds, "s", "kMaxSimulatedSeconds"));
  return t;
}

SimReport simulate(const Program& program, const Topology& topology, const HardwareSpec& hw,
                   const SimOptions& options) {
  if (g_simulated)
    throw std::logic_error("tpusim: one simulation per process (SystemC elaborates once)");
  g_simulated = true;
  setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
  const auto wall0 = std::chrono::steady_clock::now();
  program.validate();

  DeviceMesh mesh(topology, hw.cores_per_chip, program.mesh);
  ExecutionContext ctx;
  ctx.program = &program;
  ctx.hardware = &hw;
  ctx.op_time = compute_times(program, hw, options.use_measured_durations);
  ctx.op_demand.resize(program.ops.size());
  for (std::size_t i = 0; i < program.ops.size(); ++i)
    if (!program.ops[i].is_collective)
      ctx.op_demand[i] = op_demand(hw, program.ops[i].compute, ctx.op_time[i]);
  ctx.timeline = options.timeline;
  ctx.async_collectives = hw.async_collectives;

  g_design = new Design;
  g_design->machine = std::make_unique<Machine>(
      "machine", topology, hw, options.network.degraded_links, options.network.failed_links);
  g_design->queue = std::make_unique<EventQueue>("events");
  Machine& machine = *g_design->machine;
  EventQueue& queue = *g_design->queue;
  auto network = make_network(queue, options.network);
  CoreDispatch dispatch;
  CollectiveEngine engine(program, mesh, machine, *network, queue, options.collectives, dispatch);
  ctx.engine = &engine;
  engine.prepare();

  std::vector<bool> traced(machine.num_cores(), false);
  for (int c : options.traced_cores)
    if (c >= 0 && c < machine.num_cores()) traced[c] = true;
  auto& cores = g_design->cores;
  cores.reserve(machine.num_cores());
  std::vector<double> scale(machine.num_cores(), 1.0);
  for (int chip : hw.slow_chips) {
    if (chip >= topology.num_chips())
      throw ConfigError("hardware.slow_chips", std::to_string(chip) +
                                                   " is not a chip of the topology (0 to " +
                                                   std::to_string(topology.num_chips() - 1) + ")");
    for (int k = 0; k < hw.cores_per_chip; ++k)
      scale[chip * hw.cores_per_chip + k] = hw.slow_chip_factor;
  }
  for (int c = 0; c < machine.num_cores(); ++c)
    cores.push_back(std::make_unique<TensorCore>(("core" + std::to_string(c)).c_str(), c, ctx,
                                                 traced[c], scale[c]));
  dispatch.cores = &cores;
  if (options.infeed) {
    if (options.infeed->op_batch.size() != program.ops.size())
      throw std::logic_error("tpusim: the infeed plan does not match the program");
    g_design->hosts =
        std::make_unique<HostSet>(topology.num_chips(), hw.cores_per_chip, options.hosts,
                                  *options.infeed, queue, [&cores](int c) { cores[c]->wake(); });
    ctx.infeed = g_design->hosts.get();
    ctx.infeed_batch = &options.infeed->op_batch;
  }
  // Links of traced chips log their busy intervals for the timeline's utilisation counters.
  std::map<LinkModule*, LinkLog> link_logs;
  if (options.timeline)
    for (int c : options.traced_cores)
      if (c >= 0 && c < machine.num_cores())
        for (LinkModule* l : machine.links_of_chip(machine.chip_of(c))) {
          link_logs[l].chip = machine.chip_of(c);
          l->busy_log = &link_logs[l].intervals;
        }
  const auto wall1 = std::chrono::steady_clock::now();

  // A failure stops the kernel (sc_stop); its "Info: simulation stopped by user" would come
  // before tpusim's own error line. SystemC's infos are not for tpusim's users.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);
  sc_core::sc_start();
  if (auto failure = take_failure()) std::rethrow_exception(failure);

  SimReport r;
  r.chips = topology.num_chips();
  r.cores = machine.num_cores();
  // Watchdog: the kernel ran out of events; every core must have finished.
  std::vector<std::string> stuck;
  for (const auto& core : cores) {
    if (core->finished()) continue;
    const int pc = core->pc();
    std::string what = core->name();
    if (pc < static_cast<int>(program.ops.size()))
      what += " waits at op " + std::to_string(pc) + " (" + program.ops[pc].name + ")";
    if (!core->outstanding().empty())
      what += " for collective op " + std::to_string(core->outstanding().front()) + " (" +
              program.ops[core->outstanding().front()].name + ")";
    stuck.push_back(what);
    if (stuck.size() >= 3) break;
  }
  if (!stuck.empty()) {
    std::string msg;
    for (const auto& s : stuck) msg += (msg.empty() ? "" : "; ") + s;
    for (const auto& w : engine.waiting()) msg += "; " + w;
    throw StuckError(msg);
  }
  std::size_t last_index = 0;
  for (std::size_t c = 0; c < cores.size(); ++c)
    if (cores[c]->finish_time() > cores[last_index]->finish_time()) last_index = c;
  const TensorCore* last = cores[last_index].get();
  r.step_time = last->finish_time();
  r.compute = last->busy();
  r.communication = last->communicating();
  r.exposed_communication = last->exposed();
  r.compute_slowdown = last->compute_slowdown();
  r.comm_split = engine.split(static_cast<int>(last_index));
  {
    CoreResources& res = cores[last_index]->resources();
    r.occupancy.mxu = res.mxu.busy();
    r.occupancy.vpu = res.vpu.busy();
    r.occupancy.hbm = res.hbm.busy();
    r.occupancy.dma = res.dma.busy();
    r.occupancy.dma_waiting = res.dma.waiting();
    r.occupancy.dma_streams = res.dma.streams();
    r.occupancy.dma_peak_in_flight = res.dma.peak_in_flight();
  }
  for (const auto& op : program.ops)
    if (!op.is_collective) r.useful_flops_per_core += op.compute.flops;
  if (r.step_time > Duration{})
    r.mxu_utilization =
        r.useful_flops_per_core / (hw.peak_flops_per_core() * r.step_time.seconds());

  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    OpTime t{static_cast<int>(i), op.name, op.kind, ctx.op_time[i].ms()};
    if (op.is_collective) {
      auto it = engine.stats().find(static_cast<int>(i));
      if (it != engine.stats().end()) t.time_ms = it->second.longest.ms();
    }
    r.top_ops.push_back(std::move(t));
  }
  std::sort(r.top_ops.begin(), r.top_ops.end(),
            [](const OpTime& a, const OpTime& b) { return a.time_ms > b.time_ms; });
  r.collectives = engine.stats();

  double busiest = 0, sum = 0;
  for (const LinkModule* l : machine.links()) {
    const double u = r.step_time > Duration{} ? l->busy_time.seconds() / r.step_time.seconds() : 0;
    sum += u;
    r.links.total_bytes += l->bytes;
    if (u > busiest) {
      busiest = u;
      r.links.busiest_link = l->name();
    }
  }
  if (options.link_stats)
    for (const LinkModule* l : machine.links())
      r.link_stats.push_back(
          {l->basename(), l->bandwidth.GBps(), l->bytes, l->busy_time, l->transfers});
  r.links.busiest_utilization = busiest;
  r.links.mean_utilization = machine.links().empty() ? 0 : sum / machine.links().size();

  if (options.timeline) emit_link_counters(*options.timeline, link_logs, r.step_time);
  for (const auto& core : cores) r.kernel_events += core->activations();
  r.kernel_events += queue.activations();
  r.network_work = network->work_items();
  if (g_design->hosts) {
    r.hosts = g_design->hosts->num_hosts();
    r.infeed = g_design->hosts->stats();
  }
  const auto wall2 = std::chrono::steady_clock::now();
  r.elaboration_s = std::chrono::duration<double>(wall1 - wall0).count();
  r.wall_s = std::chrono::duration<double>(wall2 - wall0).count();
  return r;
}

}  // namespace tpusim
