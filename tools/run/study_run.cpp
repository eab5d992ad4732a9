#include "tools/run/study_run.hpp"

#include <spdlog/spdlog.h>

#include <iostream>

#include "compiler/compiler.hpp"
#include "core/output_file.hpp"
#include "models/workload.hpp"
#include "sim/run/simulation.hpp"
#include "tools/report/link_csv.hpp"
#include "tools/report/memory_report.hpp"
#include "tools/report/run_report.hpp"
#include "tools/report/timeline_writer.hpp"
#include "tools/report/trace_recording.hpp"
#include "tools/study/study.hpp"

namespace tpusim::cli {
namespace {

// The verdict of a program that does not fit: one line on stderr, and with --json a report
// without timing (the sweep records the point as `oom`).
int report_oom(const RunArgs& a, const Study& study, const Program& program,
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
                        {"cores", chips * study.hardware.devices_per_chip},
                        {"global_batch", program.examples_per_step},
                        {"memory", memory_json(memory.profile, memory.seconds)},
                        {"config", study.config.json()}};
    std::cout << j.dump(2) << "\n";
  }
  return 1;
}

}  // namespace

int run_study(const RunArgs& a) {
  check_distinct_outputs({{"--timeline", a.timeline},
                          {"--record-trace", a.record_trace},
                          {"--links-csv", a.links_csv}});
  if (!a.timeline.empty()) check_output_path(a.timeline, "--timeline");
  if (!a.record_trace.empty()) check_output_path(a.record_trace, "--record-trace");
  if (!a.links_csv.empty()) check_output_path(a.links_csv, "--links-csv");
  Study study = load_study_file(a.study, a.sets, LayoutChecks::Program);
  Topology topology(study.topology);
  Program program = compiled_program(study.config, topology, study.hardware);
  spdlog::info("{}: {} ops ({} collectives) on {}", a.study, program.ops.size(),
               program.num_collectives(), topology.describe());
  if (!a.record_trace.empty()) record_trace(study, program, a.record_trace);
  const TimedMemory memory = analyze_timed(program, study.hardware.hbm_bytes_per_core);
  spdlog::info("memory analysis: {:.6f} s", memory.seconds);
  if (!memory.profile.fits() && !a.allow_oom)
    return report_oom(a, study, program, topology, memory);
  SimOptions options = SimOptions::from_config(study.config);
  options.progress_interval_s = progress_interval_s();
  std::unique_ptr<TimelineWriter> trace;
  if (!a.timeline.empty()) {
    const int cores = topology.num_chips() * study.hardware.devices_per_chip;
    options.traced_cores =
        timeline_cores(cores, study.hardware.devices_per_chip, a.timeline_all_up_to);
    check_timeline_size(options.traced_cores.size(), program.ops.size(),
                        cores <= a.timeline_all_up_to
                            ? "--timeline-all-up-to " + std::to_string(a.timeline_all_up_to)
                            : "--timeline");
    trace = std::make_unique<TimelineWriter>(program, study.hardware.devices_per_chip, cores,
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
  return 0;
}

}  // namespace tpusim::cli
