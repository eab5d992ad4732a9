// tpusim run STUDY.json: build the model's SPMD Program and play it on the simulated machine.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "models/workload.hpp"
#include "sim/simulation.hpp"
#include "tools/lib/chrome_trace.hpp"
#include "tools/lib/commands.hpp"
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
  bool op_classes = false;  ///< --top given: also print the compute by op class
};

void run_study(const RunArgs& a) {
  Study study = load_study_file(a.study, a.sets);
  Topology topology(study.topology);
  Program program = build_program(study.config, topology, study.hardware);
  spdlog::info("{}: {} ops ({} collectives) on {}", a.study, program.ops.size(),
               program.num_collectives(), topology.describe());
  if (!a.record_trace.empty()) record_trace(study, program, a.record_trace);
  SimOptions options = SimOptions::from_config(study.config);
  std::unique_ptr<ChromeTrace> trace;
  if (!a.timeline.empty()) {
    trace = std::make_unique<ChromeTrace>(study.hardware.cores_per_chip);
    options.timeline = trace.get();
    options.traced_cores = timeline_cores(topology.num_chips() * study.hardware.cores_per_chip,
                                          study.hardware.cores_per_chip, a.timeline_all_up_to);
  }
  SimReport r = simulate(program, topology, study.hardware, options);
  nlohmann::json report = make_report(study, program, r, a.top);
  if (trace) {
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
  cmd->add_option("--timeline", a->timeline,
                  "write a Chrome trace event file (Perfetto, chrome://tracing)");
  cmd->add_option("--record-trace", a->record_trace,
                  "write the step's SPMD Program as a trace (.json or .json.gz) for tpusim replay");
  cmd->add_option("--timeline-all-up-to", a->timeline_all_up_to,
                  "trace every core when there are at most this many, else a sample of 3 chips")
      ->check(CLI::Range(1, 1 << 20));
  auto* top = cmd->add_option("--top", a->top,
                              "how many ops to list by time; also prints compute by op class")
                  ->check(CLI::Range(0, 100000));
  cmd->callback([a, top] {
    a->op_classes = top->count() > 0;
    run_study(*a);
  });
}};

}  // namespace
}  // namespace tpusim::cli
