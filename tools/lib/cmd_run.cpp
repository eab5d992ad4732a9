// tpusim run STUDY.json: build the model's SPMD Program and play it on the simulated machine.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "models/workload.hpp"
#include "sim/run/simulation.hpp"
#include "tools/lib/chrome_trace.hpp"
#include "tools/lib/commands.hpp"
#include "tools/lib/link_csv.hpp"
#include "tools/lib/memory_report.hpp"
#include "tools/lib/report.hpp"
#include "tools/lib/study.hpp"
#include "tools/lib/trace_recording.hpp"

namespace tpusim::cli {
namespace {

struct RunArgs {
  std::string study;
  std::vector<std::string> sets;
  bool json = false;
  std::string timeline;
  std::string record_trace;
  int timeline_all_up_to = 64;
  int top = 10;
  bool allow_oom = false;
  std::string links_csv;
  bool op_classes = false;  ///< --top given: also print the compute by op class
};

// The verdict of a program that does not fit: one line on stderr, and with --json a report
// without timing (the sweep records the point as `oom`).
void report_oom(const RunArgs& a, const Study& study, const Program& program,
                const Topology& topology, const TimedMemory& memory) {
  std::cerr << "tpusim: out of memory: " << describe_oom(memory.profile)
            << "; --allow-oom simulates anyway\n";
  if (a.json) {
    const int chips = topology.num_chips();
    nlohmann::json j = {{"schema_version", kReportSchemaVersion},
                        {"tpusim_version", TPUSIM_VERSION},
                        {"study", study.source},
                        {"out_of_memory", true},
                        {"model", program.model},
                        {"layout", layout_string(program, study.config)},
                        {"chips", chips},
                        {"cores", chips * study.hardware.cores_per_chip},
                        {"global_batch", program.examples_per_step},
                        {"memory", memory_json(memory.profile, memory.seconds)},
                        {"config", study.config.json()}};
    std::cout << j.dump(2) << "\n";
  }
  set_exit_code(1);
}

void run_study(const RunArgs& a) {
  Study study = load_study_file(a.study, a.sets, LayoutChecks::Program);
  Topology topology(study.topology);
  Program program = build_program(study.config, topology, study.hardware);
  spdlog::info("{}: {} ops ({} collectives) on {}", a.study, program.ops.size(),
               program.num_collectives(), topology.describe());
  if (!a.record_trace.empty()) record_trace(study, program, a.record_trace);
  const TimedMemory memory = analyze_timed(program, study.hardware.hbm_bytes_per_core);
  spdlog::info("memory analysis: {:.6f} s", memory.seconds);
  if (!memory.profile.fits() && !a.allow_oom)
    return report_oom(a, study, program, topology, memory);
  SimOptions options = SimOptions::from_config(study.config);
  std::unique_ptr<ChromeTrace> trace;
  if (!a.timeline.empty()) {
    const int cores = topology.num_chips() * study.hardware.cores_per_chip;
    options.traced_cores =
        timeline_cores(cores, study.hardware.cores_per_chip, a.timeline_all_up_to);
    trace = std::make_unique<ChromeTrace>(program, study.hardware.cores_per_chip, cores,
                                          options.traced_cores);
    options.timeline = trace.get();
  }
  options.link_stats = !a.links_csv.empty();
  SimReport r = simulate(program, topology, study.hardware, options);
  if (!a.links_csv.empty()) write_link_csv(a.links_csv, r);
  nlohmann::json report = make_report(study, program, r, a.top);
  report["out_of_memory"] = !memory.profile.fits();
  report["memory"] = memory_json(memory.profile, memory.seconds);
  if (trace) {
    trace->set_collective_stats(r.collectives);
    trace->live_bytes_counters(live_bytes_per_op(program));
    trace->write(a.timeline);
    spdlog::info("timeline: {} events for {} cores in {}", trace->events(),
                 options.traced_cores.size(), a.timeline);
  }
  if (a.json)
    std::cout << report.dump(2) << "\n";
  else
    print_report(std::cout, report, a.op_classes);
}

const CommandRegistrar kRegister{[](CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Simulate one training step of a study");
  cmd->add_option("study", a->study, "study JSON file")->required();
  cmd->add_option("--set", a->sets,
                  "override a parameter: path.to.key=value (value as JSON, else a string)");
  cmd->add_flag("--json", a->json, "print the report as one JSON object");
  cmd->add_option(
      "--timeline", a->timeline,
      "write a Chrome trace event file (Perfetto, chrome://tracing); gzip-compressed if "
      "the name ends in .gz");
  cmd->add_option("--record-trace", a->record_trace,
                  "write the step's SPMD Program as a trace (.json or .json.gz) for tpusim replay");
  cmd->add_option("--timeline-all-up-to", a->timeline_all_up_to,
                  "trace every core when there are at most this many, else a sample of 3 chips")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--links-csv", a->links_csv,
                  "write every link's bytes, busy time and utilisation as CSV");
  auto* top = cmd->add_option("--top", a->top,
                              "how many ops to list by time; also prints compute by op class")
                  ->check(CLI::Range(0, 100000));
  cmd->add_flag("--allow-oom", a->allow_oom,
                "simulate a program whose peak memory exceeds the HBM capacity (the report says "
                "out_of_memory: true) instead of stopping with exit code 1");
  cmd->callback([a, top] {
    a->op_classes = top->count() > 0;
    run_study(*a);
  });
}};

}  // namespace
}  // namespace tpusim::cli
