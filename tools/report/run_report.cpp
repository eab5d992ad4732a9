#include "tools/report/run_report.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <ostream>

#include "compiler/compiler.hpp"
#include "core/errors.hpp"
#include "core/params.hpp"
#include "core/units.hpp"
#include "models/memory/host_offload.hpp"
#include "models/parallelism/batch_norm_groups.hpp"
#include "models/parallelism/layout.hpp"
#include "sim/machine/host.hpp"
#include "tools/report/memory_report.hpp"
#include "tools/report/pipeline_report.hpp"
#include "tools/sweep/readable.hpp"

namespace tpusim::cli {

std::string layout_string(const Program& program, const Config& cfg) {
  // The vocabulary of `tpusim plan`'s labels (docs/results.md): data = all data replicas (the
  // mesh's data and bn axes together), bn = cores per batch-norm group
  // (parallelism.bn_group_cores), the other mesh axes by name.
  long long data = 1;
  bool has_data = false, has_bn = false;
  std::string rest;
  for (const auto& a : program.mesh) {
    if (a.name == "data" || a.name == "bn") {
      data *= a.size;
      has_data = true;
      has_bn = has_bn || a.name == "bn";
    } else {
      rest += " " + a.name + "=" + std::to_string(a.size);
    }
  }
  std::string s =
      has_data ? "data=" + std::to_string(data) + rest : rest.substr(rest.empty() ? 0 : 1);
  const auto bn = bn_group_param().if_applies(cfg);
  if (has_bn && bn) s += " bn=" + std::to_string(*bn);
  const auto slices = kParallelismSlices.if_applies(cfg);
  if (slices && *slices > 1) s += " slices=" + std::to_string(*slices);
  if (const auto dcn_fsdp = kParallelismDcnFsdp.if_applies(cfg); dcn_fsdp && *dcn_fsdp > 1)
    s += " dcn_fsdp=" + std::to_string(*dcn_fsdp);
  if (const auto dcn_pipeline = kParallelismDcnPipeline.if_applies(cfg);
      dcn_pipeline && *dcn_pipeline > 1)
    s += " dcn_pipeline=" + std::to_string(*dcn_pipeline);
  if (const auto wus = kParallelismWeightUpdateSharding.if_applies(cfg))
    s += std::string(" wus=") + (*wus ? "on" : "off");
  return s;
}

double progress_interval_s() {
  double interval = 1.0;
  // A number of seconds in [0.01, 3600]; anything else is the user's mistake, named (also when
  // stderr is piped and no line would be drawn).
  if (const char* env = std::getenv("TPUSIM_PROGRESS_INTERVAL_S"); env != nullptr) {
    char* end = nullptr;
    interval = std::strtod(env, &end);
    if (*env == '\0' || *end != '\0' || !std::isfinite(interval) || interval < 0.01 ||
        interval > 3600)
      throw ConfigError("TPUSIM_PROGRESS_INTERVAL_S",
                        fmt::format("'{}' is not a number of seconds from 0.01 to 3600", env));
  }
  return ::isatty(2) == 1 ? interval : 0.0;
}

namespace {

nlohmann::json top_ops_json(const Program& program, const SimReport& r, int top_n) {
  nlohmann::json top = nlohmann::json::array();
  for (int i = 0; i < top_n && i < static_cast<int>(r.top_ops.size()); ++i) {
    const auto& op = r.top_ops[i];
    top.push_back({{"op", op.name}, {"kind", op.kind}, {"time_ms", op.time_ms}});
    if (!program.ops[op.index].fused.empty()) top.back()["members"] = program.ops[op.index].fused;
  }
  return top;
}

/// Compute by op class (kind and input dtype): what the step's FLOPs and HBM bytes are made of.
nlohmann::json op_classes_json(const Program& program, const SimReport& r) {
  std::map<std::string, std::tuple<int, double, double, double, double>> by_class;
  for (const auto& t : r.top_ops) {
    const Op& op = program.ops[t.index];
    if (op.is_collective) continue;
    auto& [count, flops, bytes, ms, padding] = by_class[op.kind + " " + to_string(op.dtype)];
    ++count;
    flops += op.compute.flops;
    bytes += op.compute.bytes_read + op.compute.bytes_written;
    ms += t.time_ms;
    padding += op.padding_bytes;
  }
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& [name, v] : by_class)
    classes.push_back({{"class", name},
                       {"ops", std::get<0>(v)},
                       {"gflop_per_core", std::get<1>(v) * 1e-9},
                       {"hbm_bytes_per_core", std::get<2>(v)},
                       {"padding_bytes_per_core", std::get<4>(v)},
                       {"time_ms", std::get<3>(v)}});
  std::sort(classes.begin(), classes.end(), [](const auto& a, const auto& b) {
    return a["time_ms"].template get<double>() > b["time_ms"].template get<double>();
  });
  return classes;
}

/// What the compiler stage did (compiler/compiler.hpp).
nlohmann::json compiler_json(const Program& program) {
  const CompileSummary c = summarize(program);
  return {{"fusions", c.fusions},
          {"fused_ops", c.fused_ops},
          {"spmd_copies", c.copies},
          {"padding_bytes_per_core", c.padding_bytes},
          {"cmem_bytes_per_core", c.cmem_bytes}};
}

/// Collectives by kind: count, bytes per core, time in flight of the longest group.
nlohmann::json collectives_json(const Program& program, const SimReport& r) {
  std::map<std::string, std::tuple<int, double, double>> by_kind;
  for (const auto& [index, st] : r.collectives) {
    const Op& op = program.ops[index];
    auto& [count, bytes, ms] = by_kind[to_string(op.collective.kind)];
    ++count;
    bytes += op.collective.bytes;
    ms += st.longest.ms();
  }
  nlohmann::json coll = nlohmann::json::object();
  for (const auto& [kind, v] : by_kind)
    coll[kind] = {
        {"count", std::get<0>(v)}, {"bytes_per_core", std::get<1>(v)}, {"time_ms", std::get<2>(v)}};
  return coll;
}

/// Collectives by the mesh axes they span ("fsdp", "model", "data+fsdp"): count, bytes per
/// core, time in flight of the longest group.
nlohmann::json collectives_by_axis_json(const Program& program, const SimReport& r) {
  std::map<std::string, std::tuple<int, double, double>> by_axes;
  for (const auto& [index, st] : r.collectives) {
    const Op& op = program.ops[index];
    std::string axes;
    for (const auto& a : op.collective.axes) axes += (axes.empty() ? "" : "+") + a;
    if (axes.empty()) axes = op.collective.replica_groups.empty() ? "all" : "replica_groups";
    auto& [count, bytes, ms] = by_axes[axes];
    ++count;
    bytes += op.collective.bytes;
    ms += st.longest.ms();
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [axes, v] : by_axes)
    out[axes] = {
        {"count", std::get<0>(v)}, {"bytes_per_core", std::get<1>(v)}, {"time_ms", std::get<2>(v)}};
  return out;
}

/// Model and hardware FLOPs utilisation (PaLM's MFU and HFU) and tokens per second per chip,
/// where the Program carries what they need.
void add_utilisation(nlohmann::json& j, const Program& program, const SimReport& r) {
  const double step_s = r.step_time.seconds();
  if (step_s <= 0 || r.mxu_utilization <= 0) return;
  // Peak FLOP/s of one core times the step, as mxu_utilization was computed.
  const double peak_step = r.useful_flops_per_core / r.mxu_utilization;
  if (program.model_flops > 0) j["mfu"] = program.model_flops / r.cores / peak_step;
  j["hfu"] = r.mxu_utilization;
  if (program.tokens_per_example > 0) {
    const double tokens = static_cast<double>(program.examples_per_step) *
                          static_cast<double>(program.tokens_per_example);
    j["tokens_per_step"] = tokens;
    j["tokens_per_s_per_chip"] = tokens / step_s / r.chips;
  }
}

// Multislice: the slices, and communication split into the ICI and the data-center network.
void add_multislice(nlohmann::json& j, const SimReport& r) {
  if (r.slices <= 1) return;
  j["slices"] = r.slices;
  j["chips_per_slice"] = r.chips / r.slices;
  j["communication_dcn_ms"] = r.comm_split.dcn.ms();
  j["communication_ici_ms"] = (r.communication - r.comm_split.dcn).ms();
  j["dcn"] = {{"bytes_per_chip", r.dcn.bytes_per_chip},
              {"busiest_utilization", r.dcn.busiest_utilization},
              {"busiest", r.dcn.busiest_link}};
}

// Offloaded remat's PCIe copies, as the simulation timed the fetch ops
// (models/memory/host_offload.hpp): bytes each way per device, the fetch ops' waits on one.
void add_host_offload(nlohmann::json& j, const Study& study, const Program& program) {
  const HardwareSpec& hw = study.hardware;
  const HostOffloadTimes h = host_offload_times(
      program, compute_times(program, hw, false),
      HostOptions::from_config(study.config).pcie_per_chip * (1.0 / hw.devices_per_chip));
  if (h.bytes_in > 0)
    j["host_offload"] = {{"bytes_per_device_each_way", h.bytes_in}, {"exposed_ms", h.exposed.ms()}};
}

}  // namespace

nlohmann::json make_report(const Study& study, const Program& program, const SimReport& r,
                           int top_n) {
  const double step_ms = r.step_time.ms();
  const double step_s = r.step_time.seconds();
  const nlohmann::json top = top_ops_json(program, r, top_n);
  const nlohmann::json classes = op_classes_json(program, r);
  const nlohmann::json coll = collectives_json(program, r);
  nlohmann::json j = {
      {"schema_version", kReportSchemaVersion},
      {"tpusim_version", TPUSIM_VERSION},
      {"study", study.source},
      {"model", program.model},
      {"layout", layout_string(program, study.config)},
      {"chips", r.chips},
      {"cores", r.cores},
      {"devices", r.cores},
      {"tensorcores", r.chips * study.hardware.tensorcores_per_chip},
      {"global_batch", program.examples_per_step},
      {"step_time_ms", step_ms},
      {"compute_ms", r.compute.ms()},
      {"communication_ms", r.communication.ms()},
      {"exposed_communication_ms", r.exposed_communication.ms()},
      {"communication_waiting_ms", r.comm_split.waiting.ms()},
      {"communication_transfer_ms", r.comm_split.transfer.ms()},
      {"communication_sync_ms", r.comm_split.synchronisation.ms()},
      {"compute_slowdown_by_communication_ms", r.compute_slowdown.ms()},
      {"comm_share", step_s > 0 ? r.communication.seconds() / step_s : 0.0},
      {"exposed_comm_share", step_s > 0 ? r.exposed_communication.seconds() / step_s : 0.0},
      {"mxu_utilization", r.mxu_utilization},
      {"core_resources",
       {{"mxu_busy_ms", r.occupancy.mxu.ms()},
        {"vpu_busy_ms", r.occupancy.vpu.ms()},
        {"hbm_busy_ms", r.occupancy.hbm.ms()},
        {"dma_busy_ms", r.occupancy.dma.ms()},
        {"dma_waiting_ms", r.occupancy.dma_waiting.ms()},
        {"dma_streams", r.occupancy.dma_streams},
        {"dma_peak_in_flight", r.occupancy.dma_peak_in_flight}}},
      {"examples_per_s", step_s > 0 ? program.examples_per_step / step_s : 0.0},
      {"examples_per_s_per_chip", step_s > 0 ? program.examples_per_step / step_s / r.chips : 0.0},
      {"useful_tflop_per_core", r.useful_flops_per_core * 1e-12},
      {"ops", program.ops.size()},
      {"collective_ops", program.num_collectives()},
      {"compiler", compiler_json(program)},
      {"collectives", coll},
      {"top_ops", top},
      {"op_classes", classes},
      {"links",
       {{"busiest_utilization", r.links.busiest_utilization},
        {"busiest", r.links.busiest_link},
        {"mean_utilization", r.links.mean_utilization},
        {"total_bytes", r.links.total_bytes}}},
      {"kernel_events", r.kernel_events},
      {"systemc_objects", r.systemc_objects},
      {"network_work_items", r.network_work},
      {"wall_s", r.wall_s},
      {"simulation", r.symmetry},
      {"config", study.config.json()},
  };
  j["collectives_by_axis"] = collectives_by_axis_json(program, r);
  add_utilisation(j, program, r);
  add_multislice(j, r);
  add_host_offload(j, study, program);
  add_pipeline(j, program, r);
  return j;
}

// The compiler's summary, the top ops (a fusion with its members) and, with `op_classes`, the
// compute by op class with its tile padding.
static void print_compiled_ops(std::ostream& out, const nlohmann::json& j, bool op_classes) {
  if (j.contains("compiler")) {
    const auto& c = j["compiler"];
    out << fmt::format(
        "  compiler: {} fusions of {} ops, {} SPMD copies; tile padding {}, CMEM traffic {} "
        "per core\n",
        c["fusions"].get<int>(), c["fused_ops"].get<int>(), c["spmd_copies"].get<int>(),
        format_bytes(c["padding_bytes_per_core"].get<double>()),
        format_bytes(c["cmem_bytes_per_core"].get<double>()));
  }
  out << "  top ops by time (per core):\n";
  for (const auto& op : j["top_ops"]) {
    out << fmt::format("    {:10.3f} ms  {:<18} {}\n", op["time_ms"].get<double>(),
                       op["kind"].get<std::string>(), op["op"].get<std::string>());
    if (op.contains("members"))
      for (const auto& m : op["members"]) out << fmt::format("{:34}{}\n", "", m.get<std::string>());
  }
  if (!op_classes) return;
  out << "  compute by op class (per core):\n"
      << fmt::format("    {:<24} {:>6} {:>12} {:>12} {:>12} {:>10}\n", "class", "ops", "GFLOP",
                     "HBM MiB", "padding MiB", "ms");
  for (const auto& c : j["op_classes"])
    out << fmt::format(
        "    {:<24} {:6d} {:12.2f} {:12.1f} {:12.1f} {:10.3f}\n", c["class"].get<std::string>(),
        c["ops"].get<int>(), c["gflop_per_core"].get<double>(),
        c["hbm_bytes_per_core"].get<double>() / 1048576.0,
        c.value("padding_bytes_per_core", 0.0) / 1048576.0, c["time_ms"].get<double>());
}

// Multislice: " in 4 slices of 4096 chips" for the first line, or "".
static std::string slices_text(const nlohmann::json& j) {
  if (!j.contains("slices")) return "";
  return fmt::format(" in {} slices of {} chips", j["slices"].get<int>(),
                     j["chips_per_slice"].get<int>());
}

// Multislice: communication over ICI and over the data-center network.
static void print_dcn(std::ostream& out, const nlohmann::json& j) {
  if (!j.contains("communication_dcn_ms")) return;
  out << fmt::format(
      "    over ICI {:.3f} ms, over the data-center network {:.3f} ms ({} sent per chip; busiest "
      "DCN link {:.1f}%)\n",
      j["communication_ici_ms"].get<double>(), j["communication_dcn_ms"].get<double>(),
      format_bytes(j["dcn"]["bytes_per_chip"].get<double>()),
      100 * j["dcn"]["busiest_utilization"].get<double>());
}

void print_report(std::ostream& out, const nlohmann::json& j, bool op_classes) {
  // A megacore report names its devices and the TensorCores they join.
  const int devices = j["cores"].get<int>(), tensorcores = j.value("tensorcores", devices);
  const std::string units =
      devices == tensorcores ? fmt::format("{} cores", devices)
                             : fmt::format("{} megacore devices, {} cores", devices, tensorcores);
  out << fmt::format("{} on {} chips ({}){}, {}, global batch {}\n", j["model"].get<std::string>(),
                     j["chips"].get<int>(), units, slices_text(j), j["layout"].get<std::string>(),
                     j["global_batch"].get<std::int64_t>())
      << fmt::format("  step time               {:10.3f} ms\n", j["step_time_ms"].get<double>())
      << fmt::format("  compute                 {:10.3f} ms\n", j["compute_ms"].get<double>())
      << fmt::format("  communication           {:10.3f} ms  (share {:.1f}%)\n",
                     j["communication_ms"].get<double>(), 100 * j["comm_share"].get<double>())
      << fmt::format("  exposed communication   {:10.3f} ms  (share {:.1f}%)\n",
                     j["exposed_communication_ms"].get<double>(),
                     100 * j["exposed_comm_share"].get<double>());
  if (j.contains("communication_transfer_ms"))  // reports from before the split lack it
    out << fmt::format(
        "    in collectives: transfer {:.3f} ms, waiting for late members {:.3f} ms, step "
        "synchronisation {:.3f} ms\n",
        j["communication_transfer_ms"].get<double>(), j["communication_waiting_ms"].get<double>(),
        j["communication_sync_ms"].get<double>());
  print_dcn(out, j);
  if (j.contains("compute_slowdown_by_communication_ms") &&
      j["compute_slowdown_by_communication_ms"].get<double>() > 0)
    out << fmt::format("    compute slowed by collectives sharing HBM and vector unit {:.3f} ms\n",
                       j["compute_slowdown_by_communication_ms"].get<double>());
  if (j.contains("core_resources")) {
    const auto& c = j["core_resources"];
    out << fmt::format(
        "  core resources (busy)   MXU {:.3f} ms, vector unit {:.3f} ms, HBM port {:.3f} ms, DMA "
        "engines {:.3f} ms over {} streams (at most {} at once{})\n",
        c["mxu_busy_ms"].get<double>(), c["vpu_busy_ms"].get<double>(),
        c["hbm_busy_ms"].get<double>(), c["dma_busy_ms"].get<double>(),
        c["dma_streams"].get<std::uint64_t>(), c["dma_peak_in_flight"].get<int>(),
        c["dma_waiting_ms"].get<double>() > 0
            ? fmt::format(", {:.3f} ms waiting for an engine", c["dma_waiting_ms"].get<double>())
            : std::string());
  }
  out << fmt::format("  MXU utilization         {:10.1f} %\n",
                     100 * j["mxu_utilization"].get<double>())
      << fmt::format("  examples per second     {:10.0f}  ({:.1f} per chip)\n",
                     j["examples_per_s"].get<double>(), j["examples_per_s_per_chip"].get<double>());
  if (j.contains("mfu"))
    out << fmt::format(
        "  model FLOPs utilisation {:10.1f} %  (hardware FLOPs, with recomputation: "
        "{:.1f} %)\n",
        100 * j["mfu"].get<double>(), 100 * j["hfu"].get<double>());
  if (j.contains("tokens_per_s_per_chip"))
    out << fmt::format("  tokens per second       {:10.0f}  per chip\n",
                       j["tokens_per_s_per_chip"].get<double>());
  out << "  collectives:\n";
  for (auto it = j["collectives"].begin(); it != j["collectives"].end(); ++it)
    out << fmt::format("    {:<20} {:>9}  {:>10} per core  {:>10}\n", it.key(),
                       count_of(it.value()["count"].get<int>(), "op"),
                       format_bytes(it.value()["bytes_per_core"].get<double>()),
                       readable_duration_ms(it.value()["time_ms"].get<double>()));
  if (j.contains("collectives_by_axis") && j["collectives_by_axis"].size() > 1) {
    out << "  communication by mesh axis:\n";
    for (auto it = j["collectives_by_axis"].begin(); it != j["collectives_by_axis"].end(); ++it)
      out << fmt::format("    {:<20} {:>9}  {:>10} per core  {:>10}\n", it.key(),
                         count_of(it.value()["count"].get<int>(), "op"),
                         format_bytes(it.value()["bytes_per_core"].get<double>()),
                         readable_duration_ms(it.value()["time_ms"].get<double>()));
  }
  print_pipeline(out, j);
  print_compiled_ops(out, j, op_classes);
  if (j.contains("memory")) print_memory(out, j["memory"]);
  out << fmt::format("  links: busiest {:.1f}% ({}), mean {:.1f}%\n",
                     100 * j["links"]["busiest_utilization"].get<double>(),
                     j["links"]["busiest"].get<std::string>(),
                     100 * j["links"]["mean_utilization"].get<double>())
      << fmt::format("  simulated with {} kernel events in {:.3f} s\n",
                     j["kernel_events"].get<std::uint64_t>(), j["wall_s"].get<double>());
  if (j.contains("simulation"))
    out << "  simulation: " << j["simulation"].get<std::string>() << "\n";
}

}  // namespace tpusim::cli
