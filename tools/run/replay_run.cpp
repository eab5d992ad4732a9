#include "tools/run/replay_run.hpp"

#include <spdlog/spdlog.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/units.hpp"
#include "sim/run/simulation.hpp"
#include "tools/report/memory_report.hpp"
#include "tools/report/run_report.hpp"
#include "tools/report/trace_recording.hpp"
#include "tools/study/study.hpp"
#include "traces/format/mesh_groups.hpp"
#include "traces/format/rescale.hpp"
#include "traces/format/trace_format.hpp"

namespace tpusim::cli {
namespace {

// The study a trace replays in: the recorded study ("config", written by run --record-trace) if
// present, else the tpu_v3 preset with the recorded hardware laid over it; the recorded topology
// unless --topology replaces it or --mesh rescaled the trace; then --set.
Study replay_study(const ReplayArgs& a, const trace::TraceFile& t, bool rescaled) {
  const nlohmann::json& rec = t.recorded_on;
  nlohmann::json doc = recorded_study_doc(rec);
  const bool has_config = rec.is_object() && rec.contains("config") && rec["config"].is_object();
  // What the trace recorded is checked alone first, so that its errors name the trace file and
  // where in it they are (an error of --set or --topology is the command line's).
  try {
    load_config(doc);
  } catch (const ConfigError& e) {
    std::vector<Problem> problems = e.problems();
    const std::string in = a.trace + ": recorded_on" + (has_config ? ".config" : "");
    for (auto& p : problems)
      p.where = in + (p.where.empty() || p.where[0] == '(' ? "" : "." + p.where);
    throw ConfigError(problems);
  }
  if (!a.topology.empty())
    doc["topology"] = a.topology;
  else if (rec.is_object() && rec.contains("topology") && rec["topology"].is_object() && !rescaled)
    doc["topology"] = rec["topology"];
  else
    throw ConfigError(
        "--topology",
        std::string(rescaled ? "the trace was rescaled, so its recorded topology no longer fits"
                             : "the trace records no topology") +
            "; give one, e.g. --topology tpu_v3_pod or --topology 4x4");
  return load_study(doc, a.sets, a.trace);
}

// One plain sentence on why an op can run faster than the chip's peak allows for its FLOPs.
std::string faster_than_peak_reason(bool measured, bool has_matmul) {
  if (!measured && !has_matmul)
    return "with --durations model an op without a matmul shape is timed by its vector-unit and "
           "HBM work alone, while the trace's FLOP count for it (XLA counts vector work as FLOPs) "
           "would need longer on the MXUs.";
  if (!measured)
    return "the trace's FLOP count exceeds what the op's modelled duration can hold on this "
           "chip's MXUs.";
  return "the measured duration is shorter than these FLOPs take at this chip's peak: the trace "
         "was recorded on a faster chip, or its FLOP count includes vector work.";
}

// A trace op's FLOPs are checked before anything is simulated. More FLOPs than its matmul shape
// holds (2 x batch x m x k x n) is a broken trace: refused. More than its duration holds at the
// core's peak (a measured duration, or one modelled without a matmul shape: XLA's FLOP counts
// include vector work) is replayed, the op counted at peak in the MXU utilization (sim/run), so
// that stays a fraction; a warning names the first such op.
void check_flops_fit(const Program& program, const HardwareSpec& hw, bool measured,
                     const std::string& trace) {
  const std::vector<Duration> times = compute_times(program, hw, measured);
  const double peak = hw.peak_flops_per_core();
  int over = 0;
  std::string first;
  bool first_has_matmul = false;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    if (op.is_collective) continue;
    const std::string where = "ops[" + std::to_string(i) + "] (" + op.name + ")";
    const auto& mm = op.compute.matmul;
    if (mm && op.compute.flops > mm->flops() * (1 + 1e-9))
      throw ConfigError(trace + ": " + where,
                        "claims " + format_number(op.compute.flops) +
                            " FLOPs, more than its matmul shape holds (2 x " +
                            std::to_string(mm->batch) + " x " + std::to_string(mm->m) + " x " +
                            std::to_string(mm->k) + " x " + std::to_string(mm->n) + " = " +
                            format_number(mm->flops()) + "); fix flops or the matmul shape");
    const double most = peak * times[i].seconds();
    if (op.compute.flops <= most * (1 + 1e-9) || over++ > 0) continue;
    first_has_matmul = mm.has_value();
    first = where + ": " + format_number(op.compute.flops) + " FLOPs in " +
            format_number(times[i].seconds() * 1e9) + " ns, at most " + format_number(most) +
            " at the core's peak of " + format_number(peak) + " FLOP/s";
  }
  if (over > 0)
    spdlog::warn(
        "{}: {} op(s) claim more FLOPs than their duration holds at the core's peak "
        "({}); the MXU utilization counts them at peak. Why: {}",
        trace, over, first, faster_than_peak_reason(measured, first_has_matmul));
}

}  // namespace

void run_replay(const ReplayArgs& a) {
  const trace::TraceFile t = trace::read_trace_file(a.trace);
  Program program = t.program;
  if (!a.mesh.empty()) {
    try {
      program = rescale(program, trace::parse_mesh_axes(a.mesh, "--mesh"));
    } catch (const ConfigError& e) {  // name the file in front of "ops[8] (...)"
      std::vector<Problem> problems = e.problems();
      for (auto& p : problems)
        if (p.where.rfind("ops[", 0) == 0 || p.where == "examples_per_step")
          p.where = a.trace + ": " + p.where;
      throw ConfigError(problems);
    }
  }
  const Study study = replay_study(a, t, !a.mesh.empty());
  const Topology topology(study.topology);
  long long devices = 1;
  for (const auto& axis : program.mesh) devices *= axis.size;
  const long long cores =
      static_cast<long long>(topology.num_chips()) * study.hardware.devices_per_chip;
  if (devices != cores)
    throw ConfigError(a.topology.empty() ? "topology" : "--topology",
                      "the trace's mesh (" + trace::describe_mesh(program.mesh) + " = " +
                          std::to_string(devices) + " cores) does not fit " + topology.describe() +
                          " with " + std::to_string(study.hardware.devices_per_chip) +
                          " cores per chip (" + std::to_string(cores) +
                          " cores); pick a topology with that many cores or rescale with --mesh");
  SimOptions options = SimOptions::from_config(study.config);
  options.progress_interval_s = progress_interval_s();
  options.use_measured_durations = a.durations == "measured";
  check_flops_fit(program, study.hardware, options.use_measured_durations, a.trace);
  const SimReport r = simulate(program, topology, study.hardware, options);
  nlohmann::json report = make_report(study, program, r);
  report["trace"] = {{"file", a.trace},
                     {"recorded_mesh", trace::describe_mesh(t.program.mesh)},
                     {"replayed_mesh", trace::describe_mesh(program.mesh)},
                     {"durations", a.durations}};
  // A trace carries no tensor sizes: the memory section says so ({"known": false}).
  const TimedMemory memory = analyze_timed(program, study.hardware.hbm_bytes_per_core);
  report["memory"] = memory_json(memory.profile, memory.seconds);
  if (a.json)
    std::cout << report.dump(2) << "\n";
  else
    print_report(std::cout, report);
}

}  // namespace tpusim::cli
