// tpusim replay TRACE: plays a recorded or imported trace on a topology and hardware and prints
// the same report as `tpusim run`. By default the trace's recorded topology and hardware.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "models/trace/mesh_groups.hpp"
#include "models/trace/rescale.hpp"
#include "models/trace/trace_format.hpp"
#include "sim/run/simulation.hpp"
#include "tools/lib/commands.hpp"
#include "tools/lib/memory_report.hpp"
#include "tools/lib/report.hpp"
#include "tools/lib/study.hpp"
#include "tools/lib/trace_recording.hpp"

namespace tpusim::cli {
namespace {

struct ReplayArgs {
  std::string trace;
  std::string topology;
  std::string mesh;
  std::string durations = "measured";
  std::vector<std::string> sets;
  bool json = false;
};

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
      static_cast<long long>(topology.num_chips()) * study.hardware.cores_per_chip;
  if (devices != cores)
    throw ConfigError(a.topology.empty() ? "topology" : "--topology",
                      "the trace's mesh (" + trace::describe_mesh(program.mesh) + " = " +
                          std::to_string(devices) + " cores) does not fit " + topology.describe() +
                          " with " + std::to_string(study.hardware.cores_per_chip) +
                          " cores per chip (" + std::to_string(cores) +
                          " cores); pick a topology with that many cores or rescale with --mesh");
  SimOptions options = SimOptions::from_config(study.config);
  options.use_measured_durations = a.durations == "measured";
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

const CommandRegistrar kRegister{[](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "replay", "Replay a trace (recorded or imported) on a topology and hardware");
  auto a = std::make_shared<ReplayArgs>();
  cmd->add_option("TRACE", a->trace, "trace file (.json or .json.gz)")->required();
  cmd->add_option("--topology", a->topology,
                  "topology preset, shape (e.g. 4x4) or file; default: the recorded one");
  cmd->add_option("--mesh", a->mesh,
                  "rescale first: new mesh axis sizes, e.g. data=64 (axes not named keep theirs)");
  cmd->add_option("--set", a->sets,
                  "override a study parameter, e.g. hardware.ici.bandwidth_GBps=82");
  cmd->add_option("--durations", a->durations,
                  "for compute ops with a measured duration: use it (measured) or the hardware "
                  "model (model)")
      ->check(CLI::IsMember({"measured", "model"}))
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "print the report as JSON");
  cmd->callback([a] { run_replay(*a); });
}};

}  // namespace
}  // namespace tpusim::cli
