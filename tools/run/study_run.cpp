#include "tools/run/study_run.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

#include "compiler/compiler.hpp"
#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "models/workload.hpp"
#include "sim/run/simulation.hpp"
#include "tools/report/link_csv.hpp"
#include "tools/report/memory_report.hpp"
#include "tools/report/op_profile.hpp"
#include "tools/report/run_report.hpp"
#include "tools/report/stats_file.hpp"
#include "tools/report/timeline_writer.hpp"
#include "tools/report/trace_recording.hpp"
#include "tools/study/study.hpp"
#include "tools/sweep/expand.hpp"
#include "traces/format/program_file.hpp"

namespace tpusim::cli {
namespace {

// The verdict of a program that does not fit: one line on stderr, and with --json a report
// without timing (the sweep records the point as `oom`).
int report_oom(const RunArgs& a, const Study& study, const Program& program,
               const Topology& topology, const TimedMemory& memory) {
  std::cerr << "tpusim: out of memory: " << describe_oom(memory.profile)
            << "; --allow-oom simulates anyway\n";
  if (a.json) {
    const int chips = topology.num_chips() * topology.slices();  // every slice's, as a run's
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

/// The option that names the profile's folder: `--out` of `tpusim profile`, `--profile` of run.
std::string profile_option(const RunArgs& a) { return a.profile_command ? "--out" : "--profile"; }

/// A folder for the profile, checked before the work: an existing path must be a folder.
void check_profile_dir(const RunArgs& a) {
  if (a.profile_command && a.profile.empty())
    throw ConfigError("--out", "an empty path; give the folder for profile.html and profile.json");
  if (a.profile.empty()) return;
  std::error_code ec;
  if (std::filesystem::exists(a.profile, ec) && !std::filesystem::is_directory(a.profile, ec))
    throw ConfigError(profile_option(a) + " " + a.profile,
                      "is not a folder; the profile is written into a folder "
                      "(profile.html, profile.json), created if missing");
}

/// Writes the op profile and prints what the command prints: the profile's summary (or JSON)
/// for `tpusim profile`, else the run's report.
void finish(const RunArgs& a, const Study& study, const Program& program, const SimReport& r,
            const nlohmann::json& report) {
  if (!a.profile.empty()) {
    const nlohmann::json profile = op_profile_json(study, program, r);
    write_op_profile(a.profile, profile, profile_option(a));
    if (a.profile_command) {
      if (a.json)
        std::cout << profile.dump(2) << "\n";
      else
        print_op_profile(std::cout, profile, a.top);
      spdlog::info("profile: {}/profile.html and {}/profile.json", a.profile, a.profile);
      if (!a.json)
        std::cout << "  written: " << a.profile << "/profile.html (open in a browser), "
                  << a.profile << "/profile.json\n";
      return;
    }
  }
  if (a.json)
    std::cout << report.dump(2) << "\n";
  else
    print_report(std::cout, report, a.op_classes);
}

}  // namespace

// A full simulation for a timeline is worth a warning past one pod of TPU v3 cores.
constexpr int kFullTimelineWarnCores = 2048;

int run_study(const RunArgs& a) {
  check_distinct_outputs({{"--timeline", a.timeline},
                          {"--record-trace", a.record_trace},
                          {"--links-csv", a.links_csv}});
  if (!a.timeline.empty()) check_output_path(a.timeline, "--timeline");
  if (!a.record_trace.empty()) check_output_path(a.record_trace, "--record-trace");
  if (!a.links_csv.empty()) check_output_path(a.links_csv, "--links-csv");
  if (!a.stats.empty()) check_output_path(a.stats, "--stats");
  check_profile_dir(a);
  Study study = load_study_file(a.study, a.sets, LayoutChecks::Program);
  Topology topology(study.topology);
  Program program =
      a.program.empty()
          ? compiled_program(study.config, topology, study.hardware)
          : read_program_file(a.program, program_file_tag(sweep::study_id(study.config.json())),
                              "--program");
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
        a.timeline_cores.empty()
            ? timeline_cores(cores, study.hardware.devices_per_chip, a.timeline_all_up_to)
            : parse_timeline_cores(a.timeline_cores, cores);
    check_timeline_size(options.traced_cores.size(), program.ops.size(),
                        !a.timeline_cores.empty() ? "--timeline-cores"
                        : cores <= a.timeline_all_up_to
                            ? "--timeline-all-up-to " + std::to_string(a.timeline_all_up_to)
                            : "--timeline");
    if (!options.symmetry && cores > kFullTimelineWarnCores)
      spdlog::warn(
          "the timeline comes from a full simulation of all {} cores (sim.symmetry=off), which "
          "may take minutes; with sim.symmetry=auto (the default) the symmetric domain's "
          "timeline is translated to the cores asked for",
          cores);
    trace = std::make_unique<TimelineWriter>(program, study.hardware.devices_per_chip, cores,
                                             options.traced_cores);
    options.timeline = trace.get();
  }
  options.link_stats = !a.links_csv.empty();
  options.stats = !a.stats.empty();
  SimReport r = simulate(program, topology, study.hardware, options);
  if (!a.links_csv.empty()) write_link_csv(a.links_csv, r);
  if (!a.stats.empty()) write_stats_file(a.stats, study.source, r);
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
  finish(a, study, program, r, report);
  return 0;
}

}  // namespace tpusim::cli
