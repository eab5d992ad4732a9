#include "sim/run/simulation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <systemc>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "models/memory/host_offload.hpp"
#include "sim/collectives/collective_engine.hpp"
#include "sim/collectives/symmetry.hpp"
#include "sim/core/tensor_core.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "sim/kernel/event_queue.hpp"
#include "sim/kernel/failure.hpp"
#include "sim/kernel/reports.hpp"
#include "sim/kernel/stats.hpp"
#include "sim/kernel/timeline.hpp"
#include "sim/machine/machine.hpp"
#include "sim/run/link_usage.hpp"
#include "sim/run/run_progress.hpp"
#include "sim/run/timeline_images.hpp"
#include "topologies/host_blocks.hpp"

namespace tpusim {
namespace {

bool g_simulated = false;  // SystemC allows one elaboration per process

// clang-format off
const Param<std::string> kSimSymmetry{{"sim.symmetry", ParamType::String, "", "auto", "auto: where the machine and the program are symmetric under translations of the torus (no failed, degraded or slow part, no hosts, every collective's groups and plans mapped onto themselves), simulate only the cores of one fundamental domain and expand the results, which are the full simulation's; off: simulate every core", -1e300, 1e300, {"auto", "off"}}};
// clang-format on

/// The engine's calls to the cores. A symmetric run plays only the domain's cores, the ones
/// elaborated; a call for another is a bug, not a core to make up.
class CoreDispatch : public CollectiveListener {
 public:
  Machine* machine = nullptr;
  void collective_done(int core, int op_index) override {
    elaborated(core).collective_done(op_index);
  }
  CoreResources& resources(int core) override { return elaborated(core).resources(); }

 private:
  TensorCore& elaborated(int core) const {
    if (!machine->has_core(core))
      throw std::logic_error("tpusim bug: the collectives reached core " + std::to_string(core) +
                             ", which is not elaborated (outside the symmetric domain)");
    return machine->core(core);
  }
};

/// The elaborated design outlives simulate(): SystemC allows one design per process anyway, and
/// its module registry removes modules in quadratic time, which for 8192 cores and 24k links
/// costs more than the simulation. The process exit reclaims it; the pointer keeps it reachable.
struct Design {
  ExecutionContext ctx;
  std::unique_ptr<DeviceMesh> mesh;
  std::unique_ptr<EventQueue> queue;
  std::unique_ptr<Machine> machine;
  std::unique_ptr<Network> network;
  CoreDispatch dispatch;
  std::unique_ptr<CollectiveEngine> engine;
  LinkLogs link_logs;
  std::unique_ptr<DomainTrace> domain_trace;  ///< a symmetric run's timeline, through images
  std::unique_ptr<SymmetricRun> symmetric;    ///< null: every core simulated
  std::string symmetry;                       ///< SimReport::symmetry
  MemoryFactory memory;                       ///< SimOptions::memory_model, for the cores
  MemoryFactory cmem;                         ///< SimOptions::cmem_model
  MemoryFactory vmem;                         ///< SimOptions::vmem_model
};
Design* g_design = nullptr;

/// Per core: how much slower it computes (hardware.slow_chips at hardware.slow_chip_factor).
/// Chips past the topology are checked later (check_slow_chips), after the collectives' plans,
/// as before the cores were built inside their chips.
std::vector<double> compute_scales(const Topology& topology, const HardwareSpec& hw) {
  std::vector<double> scale(static_cast<std::size_t>(topology.num_chips()) * hw.devices_per_chip,
                            1.0);
  for (int chip : hw.slow_chips)
    if (chip >= 0 && chip < topology.num_chips())
      for (int k = 0; k < hw.devices_per_chip; ++k)
        scale[chip * hw.devices_per_chip + k] = hw.slow_chip_factor;
  return scale;
}

void check_slow_chips(const Topology& topology, const HardwareSpec& hw) {
  for (int chip : hw.slow_chips)
    if (chip >= topology.num_chips())
      throw ConfigError("hardware.slow_chips", std::to_string(chip) +
                                                   " is not a chip of the topology (0 to " +
                                                   std::to_string(topology.num_chips() - 1) + ")");
}

void fill_context(ExecutionContext& ctx, const Program& program, const HardwareSpec& hw,
                  const SimOptions& options) {
  ctx.program = &program;
  ctx.hardware = &hw;
  ctx.op_time = compute_times(program, hw, options.use_measured_durations);
  // The chip's host link shared by its devices.
  HostOffloadTimes host = host_offload_times(
      program, ctx.op_time, options.hosts.pcie_per_chip * (1.0 / hw.devices_per_chip));
  ctx.op_time = std::move(host.op_time);
  ctx.op_demand.resize(program.ops.size());
  for (std::size_t i = 0; i < program.ops.size(); ++i)
    if (!program.ops[i].is_collective)
      ctx.op_demand[i] = op_demand(hw, program.ops[i].compute, ctx.op_time[i]);
  ctx.op_waited.assign(program.ops.size(), Duration{});
  ctx.index_dependencies();
  ctx.timeline = options.timeline;
  ctx.async_collectives = hw.async_collectives;
}

/// Mean hops between two chips of `topology` drawn at random: per dimension of k chips, k/4
/// on a ring (k even; (k^2 - 1)/(4k) odd), (k^2 - 1)/(3k) on a line; summed over dimensions.
double mean_hops(const Topology& topology) {
  double hops = 0;
  for (int d = 0; d < topology.num_dims(); ++d) {
    const double k = topology.dim(d);
    hops += topology.wraps(d) ? (static_cast<int>(k) % 2 == 0 ? k / 4 : (k * k - 1) / (4 * k))
                              : (k * k - 1) / (3 * k);
  }
  return hops;
}

/// An all-to-all's crossing flows cut the packet trains into single packets (docs/network.md),
/// each an event per hop: its packets, over every core, times the mean hops. Past
/// kMaxAllToAllPacketHops the run would take minutes; refused, naming the packet size that fits.
void check_all_to_all_packet_hops(const Program& program, const Topology& topology, int cores,
                                  const SimOptions& options) {
  double bytes = 0;
  for (const Op& op : program.ops)
    if (op.is_collective && op.collective.kind == CollectiveKind::AllToAll)
      bytes += op.collective.bytes * static_cast<double>(cores);
  const double per_packet_hops = bytes * std::max(1.0, mean_hops(topology));
  const double hops = per_packet_hops / options.network.packet_bytes;
  if (hops <= kMaxAllToAllPacketHops) return;
  const double fits = std::pow(2.0, std::ceil(std::log2(per_packet_hops / kMaxAllToAllPacketHops)));
  throw ConfigError(
      "network.packet_bytes",
      format_number(options.network.packet_bytes) +
          " bytes: the all-to-alls' packets would make about " + format_number(hops) +
          " packet-hops (the bytes " + std::to_string(cores) + " cores send, times " +
          format_number(mean_hops(topology)) + " mean hops), " +
          past_limit(kMaxAllToAllPacketHops, "packet-hops", "kMaxAllToAllPacketHops") +
          "; allowed: network.packet_bytes=" + format_number(fits) +
          " or more, or network.fidelity=flow");
}

/// The packet level's work grows with the packets a run injects; estimated from the Program
/// (every core runs every collective) before anything is elaborated.
void check_packet_work(const Program& program, const Topology& topology, int cores,
                       const SimOptions& options) {
  if (options.network.fidelity != "packet") return;
  double bytes = 0;
  for (const Op& op : program.ops)
    if (op.is_collective)
      bytes += (op.collective.kind == CollectiveKind::AllReduce ? 2 : 1) * op.collective.bytes *
               static_cast<double>(cores);
  const double packets = bytes / options.network.packet_bytes;
  if (packets <= kMaxInjectedPackets) {
    check_all_to_all_packet_hops(program, topology, cores, options);
    return;
  }
  throw ConfigError("network.packet_bytes",
                    "the packet level would inject about " + format_number(packets) +
                        " packets of " + format_number(options.network.packet_bytes) +
                        " bytes (the collective bytes " + std::to_string(cores) + " cores send), " +
                        past_limit(kMaxInjectedPackets, "packets", "kMaxInjectedPackets") +
                        "; use larger packets, fewer bytes or network.fidelity=flow");
}

/// Why the run cannot be symmetric before looking at the program, or "".
std::string asymmetric_machine(const HardwareSpec& hw, const SimOptions& options) {
  if (!options.symmetry) return "sim.symmetry=off";
  if (!options.network.failed_links.empty()) return "network.failed_links is set";
  if (!options.network.degraded_links.empty()) return "network.degraded_links is set";
  if (!hw.slow_chips.empty()) return "hardware.slow_chips is set";
  return "";
}

/// Symmetric simulation where it applies (sim/collectives/symmetry.hpp), else the reason.
void choose_symmetry(Design& d, const Program& program, const HardwareSpec& hw,
                     const SimOptions& options) {
  std::string why = asymmetric_machine(hw, options);
  if (why.empty()) {
    // With hosts the domain holds whole host blocks: a host outside it feeds only cores that
    // do not run, and the hosts inside are the images of the others.
    std::vector<int> blocks;
    if (options.infeed)
      blocks = host_blocks(d.machine->topology(), options.hosts.chip_block).extent;
    else if (const Dcn* dcn = d.machine->dcn())  // the DCN links are per host too
      blocks = dcn->blocks().extent;
    SymmetrySearch found = find_symmetry(program, *d.machine, d.engine->planner(), blocks,
                                         options.network.fidelity == "message");
    d.symmetric = std::move(found.run);
    why = found.reason;
  }
  // Multislice: only one slice is elaborated in either mode (sim/machine/dcn.hpp).
  const int slices = d.machine->slices();
  const std::string images =
      slices > 1 ? "; 1 of " + std::to_string(slices) + " slices simulated, the others its images"
                 : std::string();
  if (!d.symmetric) {
    d.symmetry = "full: " + why + images;
    return;
  }
  d.symmetry = "symmetric: " + d.symmetric->describe() + images;
  d.engine->use_symmetry(d.symmetric.get());
}

/// After a symmetric run: every link carries what its image in the domain carried, and every
/// collective counts the groups of the whole machine.
void expand_symmetric(const Design& d) {
  if (!d.symmetric) return;
  const auto& links = d.machine->links();
  for (std::size_t i = 0; i < links.size(); ++i) {
    const NetworkLink& from = *links[d.symmetric->link_rep[i]];
    if (&from == links[i]) continue;
    links[i]->bytes = from.bytes;
    links[i]->busy_time = from.busy_time;
    links[i]->transfers = from.transfers;
  }
  d.engine->expand_symmetric_stats();
}

/// The timeline's cores and links: in a full run themselves; in a symmetric run their images in
/// the domain, whose spans and link logs stand for theirs (sim/run/timeline_images.hpp).
void trace_timeline(Design& d, const SimOptions& options) {
  if (!d.symmetric) {
    d.link_logs = log_traced_links(*d.machine, options.traced_cores);
    return;
  }
  d.domain_trace =
      trace_domain_images(*d.machine, *d.symmetric, *options.timeline, options.traced_cores);
  d.machine->set_traced(d.domain_trace->traced);
  d.ctx.timeline = d.domain_trace->sink.get();
}

/// Elaboration: the event queue, the machine's module tree (chips, links, hosts), the network
/// and the collective engine with every collective planned; then, once the symmetry is chosen
/// (from the links and the plans), the TensorCores that run: a symmetric run's domain, else all.
Design& elaborate(const Program& program, const Topology& topology, const HardwareSpec& hw,
                  const SimOptions& options) {
  g_design = new Design;
  Design& d = *g_design;
  d.mesh = std::make_unique<DeviceMesh>(topology, hw.devices_per_chip, program.mesh);
  fill_context(d.ctx, program, hw, options);
  d.memory = options.memory_model;
  if (d.memory) d.ctx.memory = &d.memory;
  d.cmem = options.cmem_model;
  if (d.cmem) d.ctx.cmem = &d.cmem;
  d.vmem = options.vmem_model;
  if (d.vmem) d.ctx.vmem = &d.vmem;
  d.ctx.direct_access = options.direct_access;
  d.queue = std::make_unique<EventQueue>("events");
  MachineParts parts;
  parts.degraded = options.network.degraded_links;
  parts.failed = options.network.failed_links;
  parts.cores = &d.ctx;
  parts.traced.assign(static_cast<std::size_t>(topology.num_chips()) * hw.devices_per_chip, false);
  for (int c : options.traced_cores)
    if (c >= 0 && c < static_cast<int>(parts.traced.size())) parts.traced[c] = true;
  parts.compute_scale = compute_scales(topology, hw);
  if (options.infeed && options.infeed->op_batch.size() != program.ops.size())
    throw std::logic_error("tpusim: the infeed plan does not match the program");
  parts.infeed = options.infeed;
  parts.hosts = options.hosts;
  parts.queue = d.queue.get();
  parts.dcn = options.dcn;
  d.machine = std::make_unique<Machine>("multipod", topology, hw, parts);
  d.network = make_network(*d.queue, options.network);
  d.dispatch.machine = d.machine.get();
  d.engine = std::make_unique<CollectiveEngine>(program, *d.mesh, *d.machine, *d.network, *d.queue,
                                                options.collectives, d.dispatch);
  d.ctx.engine = d.engine.get();
  d.engine->prepare();
  check_slow_chips(topology, hw);
  choose_symmetry(d, program, hw, options);
  for (const auto& note : d.engine->planner().choice_notes()) d.symmetry += "; " + note;
  if (options.timeline) trace_timeline(d, options);
  d.machine->elaborate_cores(d.symmetric ? &d.symmetric->active : nullptr);
  if (d.machine->hosts()) {
    d.ctx.infeed = d.machine->hosts();
    d.ctx.infeed_batch = &options.infeed->op_batch;
  }
  return d;
}

/// The run: the kernel plays the Program; a failure in a process is rethrown, and a core that
/// never finished (the kernel ran out of events) is a StuckError naming what waits on what.
void run(const Design& d, const Program& program, double progress_interval_s) {
  // A failure stops the kernel (sc_stop); its "Info: simulation stopped by user" would come
  // before tpusim's own error line. SystemC's infos are not for tpusim's users.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);
  systemc_reports_to_stderr();
  {
    std::unique_ptr<RunProgress> progress;
    if (progress_interval_s > 0) {
      // What each collective is expected to take (the cost model, uncontended): only on a
      // terminal, where the line is drawn.
      std::vector<Duration> expected(program.ops.size());
      for (std::size_t i = 0; i < program.ops.size(); ++i)
        if (program.ops[i].is_collective)
          expected[i] = d.engine->planner().expected_time(static_cast<int>(i));
      progress = std::make_unique<RunProgress>(*d.machine, program, stderr, progress_interval_s,
                                               std::move(expected));
      d.queue->set_tick([p = progress.get()] { p->tick(); });
    }
    sc_core::sc_start();
    d.queue->set_tick({});
  }
  if (auto failure = take_failure()) std::rethrow_exception(failure);
  std::vector<std::string> stuck;
  for (int c = 0; c < d.machine->num_cores() && stuck.size() < 3; ++c) {
    if (!d.machine->has_core(c)) continue;  // outside the symmetric domain: never ran
    const TensorCore& core = d.machine->core(c);
    if (core.finished()) continue;
    const int pc = core.pc();
    std::string what = core.name();
    if (pc < static_cast<int>(program.ops.size()))
      what += " waits at op " + std::to_string(pc) + " (" + program.ops[pc].name + ")";
    if (!core.outstanding().empty())
      what += " for collective op " + std::to_string(core.outstanding().front()) + " (" +
              program.ops[core.outstanding().front()].name + ")";
    stuck.push_back(what);
  }
  if (stuck.empty()) return;
  std::string msg;
  for (const auto& s : stuck) msg += (msg.empty() ? "" : "; ") + s;
  for (const auto& w : d.engine->waiting()) msg += "; " + w;
  throw StuckError(msg);
}

/// The core that finished last and its time: the step time, its compute and communication,
/// its resources' occupancy. In a symmetric run every core's timeline is its domain image's,
/// so the last of the elaborated cores finishes with the last of all.
void report_last_core(const Design& d, SimReport& r) {
  const Machine& m = *d.machine;
  int last_index = -1;  // the first core elaborated with the latest finish, as over every core
  for (int c = 0; c < m.num_cores(); ++c)
    if (m.has_core(c) &&
        (last_index < 0 || m.core(c).finish_time() > m.core(last_index).finish_time()))
      last_index = c;
  if (last_index < 0) throw std::logic_error("tpusim bug: no TensorCore elaborated");
  TensorCore& last = m.core(last_index);
  r.step_time = last.finish_time();
  r.compute = last.busy();
  r.communication = last.communicating();
  r.exposed_communication = last.exposed();
  r.compute_slowdown = last.compute_slowdown();
  r.comm_split = d.engine->split(last_index);
  const CoreResources& res = last.resources();
  r.occupancy.mxu = res.mxu.busy();
  r.occupancy.vpu = res.vpu.busy();
  r.occupancy.hbm = res.memory().busy();
  r.occupancy.dma = res.dma.busy();
  r.occupancy.dma_waiting = res.dma.waiting();
  r.occupancy.dma_streams = res.dma.streams();
  r.occupancy.dma_peak_in_flight = res.dma.peak_in_flight();
}

/// Every op's time per core per step (a collective's longest group), longest first.
void report_ops(const Design& d, const Program& program, const HardwareSpec& hw, SimReport& r) {
  // An op counts at most what its duration holds at its operands' peak (a replayed trace's
  // FLOP count may claim more than its measured duration allows): int8 and fp8 matmuls at
  // hardware.mxu.int8_rate or fp8_rate times the bf16 peak, the rest at the bf16 peak.
  const double peak = hw.peak_flops_per_core();
  for (std::size_t i = 0; i < program.ops.size(); ++i)
    if (!program.ops[i].is_collective) {
      const ComputeCost& c = program.ops[i].compute;
      r.useful_flops_per_core +=
          std::min(c.flops, peak * mxu_rate(hw.mxu, c.mxu_dtype) * d.ctx.op_time[i].seconds());
    }
  if (r.step_time > Duration{})
    r.mxu_utilization =
        r.useful_flops_per_core / (hw.peak_flops_per_core() * r.step_time.seconds());
  const auto& stats = d.engine->stats();
  std::vector<double> time_ms(program.ops.size());
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    time_ms[i] = d.ctx.op_time[i].ms();
    if (program.ops[i].is_collective) {
      auto it = stats.find(static_cast<int>(i));
      if (it != stats.end()) time_ms[i] = it->second.longest.ms();
    }
  }
  // Sorted as indices, then named: the sort moves no strings (the same order as sorting the
  // OpTimes themselves, which std::sort would reach by the same comparisons).
  std::vector<int> order(program.ops.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return time_ms[a] > time_ms[b]; });
  r.top_ops.reserve(order.size());
  for (int i : order) {
    const Op& op = program.ops[i];
    r.top_ops.push_back({i, op.name, op.kind, time_ms[i], d.ctx.op_waited[i].ms()});
  }
  r.collectives = stats;
}

/// Reads every module's statistics into `out` (after expand_symmetric: the links' are the whole
/// machine's).
void collect_stats(SimStats& out) {
  struct Collector : StatVisitor {
    SimStats& out;
    explicit Collector(SimStats& o) : out(o) {}
    void stat(const std::string& path, double value) override {
      out.values.emplace_back(path, value);
    }
    void describe(const std::string& kind, const char* unit, const char* description) override {
      out.descriptions.emplace(kind, std::make_pair(std::string(unit), std::string(description)));
    }
  } collector(out);
  visit_module_stats(collector);
}

/// The report: the last core, the ops, the links, the kernel's work and the hosts.
SimReport report(const Design& d, const Program& program, const HardwareSpec& hw,
                 const SimOptions& options) {
  SimReport r;
  expand_symmetric(d);
  r.symmetry = d.symmetry;
  r.slices = d.machine->slices();
  r.chips = d.machine->topology().num_chips() * r.slices;
  r.cores = d.machine->num_cores() * r.slices;
  report_last_core(d, r);
  report_ops(d, program, hw, r);
  report_links(*d.machine, options.link_stats, r);
  if (options.timeline && d.domain_trace) {
    copy_image_logs(*d.domain_trace);
    emit_link_counters(*options.timeline, *d.machine, d.domain_trace->logs, r.step_time);
  } else if (options.timeline) {
    emit_link_counters(*options.timeline, *d.machine, d.link_logs, r.step_time);
  }
  for (int c = 0; c < d.machine->num_cores(); ++c)
    if (d.machine->has_core(c)) r.kernel_events += d.machine->core(c).activations();
  r.kernel_events += d.queue->activations();
  r.network_work = d.network->work_items();
  r.systemc_objects = count_systemc_objects();
  if (options.stats) collect_stats(r.stats);
  if (const HostSet* hosts = d.machine->hosts()) {
    r.hosts = hosts->num_hosts();
    r.infeed = hosts->stats();
  }
  return r;
}

}  // namespace

SimOptions SimOptions::from_config(const Config& cfg) {
  SimOptions o;
  o.network = NetworkOptions::from_config(cfg);
  o.collectives = CollectiveOptions::from_config(cfg);
  // The message level folds routes onto the domain: no route sets its extent there.
  if (o.network.fidelity == "message") o.collectives.auto_resolution = 0;
  o.hosts = HostOptions::from_config(cfg);
  o.symmetry = kSimSymmetry(cfg) == "auto";
  o.dcn = DcnOptions::from_config(cfg);
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
  check_packet_work(program, topology, topology.num_chips() * hw.devices_per_chip, options);
  const Design& design = elaborate(program, topology, hw, options);
  const auto wall1 = std::chrono::steady_clock::now();
  run(design, program, options.progress_interval_s);
  SimReport r = report(design, program, hw, options);
  const auto wall2 = std::chrono::steady_clock::now();
  r.elaboration_s = std::chrono::duration<double>(wall1 - wall0).count();
  r.wall_s = std::chrono::duration<double>(wall2 - wall0).count();
  return r;
}

}  // namespace tpusim
