#include "tools/run/sweep_run.hpp"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "models/train_schedule.hpp"
#include "models/workload.hpp"
#include "tools/study/study.hpp"
#include "tools/sweep/expand.hpp"
#include "tools/sweep/golden.hpp"
#include "tools/sweep/readable.hpp"
#include "tools/sweep/sweep_dir.hpp"
#include "tools/sweep/sweep_progress.hpp"
#include "tools/sweep/sweep_runner.hpp"

namespace tpusim::cli {
namespace {

namespace fs = std::filesystem;

std::pair<int, int> parse_shard(const std::string& text) {
  int i = 0, n = 0;
  char slash = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &i, &slash, &n, &extra) != 3 || slash != '/' || n < 1 ||
      i < 1 || i > n)
    throw ConfigError("--shard " + text, "expected I/N with 1 <= I <= N, e.g. --shard 2/4");
  return {i, n};
}

/// Compares with the golden (or rewrites it); returns true if the check passed.
bool check_golden(const SweepArgs& a, const sweep::CsvTable& table, bool all_ok) {
  const double tolerance = sweep::parse_tolerance(a.tolerance);
  if (a.update_golden) {
    if (!all_ok) {
      std::cerr << "tpusim sweep: not updating " << a.golden << ": some points did not succeed\n";
      return false;
    }
    sweep::write_csv(a.golden, sweep::golden_from_results(table, a.sweep_file, TPUSIM_VERSION));
    std::cerr << "tpusim sweep: golden " << a.golden << " rewritten ("
              << count_of(static_cast<long long>(table.rows.size()), "point") << ")\n";
    return true;
  }
  auto drifts = sweep::compare_to_golden(sweep::read_csv(a.golden), table, tolerance);
  if (drifts.empty()) {
    std::cerr << "tpusim sweep: "
              << (table.rows.size() == 1
                      ? "the only point matches "
                      : "all " + std::to_string(table.rows.size()) + " points match ")
              << a.golden << " within " << a.tolerance << "\n";
    return true;
  }
  std::cout << sweep::drift_table(drifts);
  std::cerr << "tpusim sweep: " << count_of(static_cast<long long>(drifts.size()), "drift")
            << " from " << a.golden << " beyond " << a.tolerance << "\n";
  return false;
}

/// The sweep's points, each through every check of `tpusim validate` (config, layout, program)
/// before any runs.
std::vector<sweep::SweepPoint> checked_points(const sweep::SweepSpec& spec,
                                              const std::vector<std::string>& sets) {
  const bool train = spec.command == "train";
  return sweep::expand(spec, sets, [train](const nlohmann::json& doc) {
    Study study =
        load_study(doc, {}, "(sweep point)", train ? LayoutChecks::Train : LayoutChecks::Program);
    const Topology topology(study.topology);
    build_program(study.config, topology, study.hardware);
    if (train) {  // what tpusim train needs besides: the schedule and the eval program
      read_train_schedule(study.config);
      build_program_of(study.config, topology, study.hardware, ProgramKind::Eval);
    }
    return study.config.json();
  });
}

}  // namespace

int run_sweep(SweepArgs a) {
  if (a.update_golden && a.golden.empty())
    throw ConfigError("--update-golden", "needs --check GOLDEN.csv (the file to rewrite)");
  const auto [shard, shard_count] = parse_shard(a.shard);
  if (!a.golden.empty() && shard_count > 1)
    throw ConfigError(
        "--check",
        "compares a whole sweep; run the shards, `tpusim merge` them, then check unsharded");
  if (!a.golden.empty() && !a.update_golden && !fs::exists(a.golden))
    throw ConfigError("--check " + a.golden,
                      "no such golden file (create it with --update-golden)");
  if (!a.golden.empty() && fs::is_directory(a.golden))
    throw ConfigError("--check " + a.golden, "is a folder; a golden CSV file is allowed");
  sweep::parse_tolerance(a.tolerance);          // bad input fails before anything runs
  if (!a.golden.empty() && !a.update_golden) {  // so does a golden that cannot be compared
    const sweep::CsvTable golden = sweep::read_csv(a.golden);
    sweep::rows_by_point(golden, sweep::swept_columns(golden));
  }
  if (a.update_golden) check_output_path(a.golden, "--check");

  const sweep::SweepSpec spec = sweep::load_sweep_file(a.sweep_file);
  const auto points = checked_points(spec, a.sets);
  if (a.out_dir.empty()) a.out_dir = "out/sweep_" + fs::path(a.sweep_file).stem().string();

  sweep::Plan plan;
  plan.sweep_file = a.sweep_file;
  plan.columns = spec.column_names();
  plan.series_axes = spec.series_axes();
  plan.shard = shard;
  plan.shard_count = shard_count;
  plan.sets = a.sets;
  plan.command = spec.command;
  for (const auto& p : points) plan.points.push_back({p.index, p.id, p.values});

  const SweepDirLock lock = make_sweep_dir(a.out_dir);
  write_plan(a.out_dir, plan);
  std::vector<std::size_t> todo;
  std::size_t done = 0;
  for (std::size_t idx : plan.own_indices()) {
    const auto& p = points[idx];
    if (sweep::finished(sweep::read_outcome(a.out_dir, p.id).state)) {
      ++done;
      continue;
    }
    write_output_file(sweep::study_file(a.out_dir, p.id), p.resolved.dump(1) + "\n");
    todo.push_back(idx);
  }
  ResultsAppender results(a.out_dir, plan);

  const std::size_t own = done + todo.size();
  SweepProgress progress(own, done, ::isatty(STDERR_FILENO) == 1);
  RunnerSummary summary = run_points(plan, todo, {a.out_dir, a.jobs, spec.command, a.server},
                                     progress, [&](std::size_t index) { results.append(index); });
  progress.close();
  const sweep::CsvTable table = write_results(a.out_dir, plan);

  std::size_t ok = 0, oom = 0;
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    ok += table.cell(r, "status") == "ok";
    oom += table.cell(r, "status") == "oom";
  }
  // A point out of memory is a result (the layout does not fit), not a failure.
  const bool all_ok = ok + oom == table.rows.size();
  std::cerr << "tpusim sweep: " << ok << " of "
            << count_of(static_cast<long long>(table.rows.size()), "point") << " ok";
  if (oom > 0) std::cerr << ", " << oom << " out of memory";
  if (shard_count > 1)
    std::cerr << " (shard " << shard << "/" << shard_count << " of " << plan.points.size() << ")";
  std::cerr << "; results in " << a.out_dir << "/results.csv\n";
  if (summary.interrupted) {
    std::cerr << "tpusim sweep: interrupted; finished points are kept, rerun the same command to "
                 "run the rest\n";
    return 1;
  }
  bool passed = all_ok;
  if (!a.golden.empty()) passed = check_golden(a, table, all_ok) && passed;
  return passed ? 0 : 1;
}

}  // namespace tpusim::cli
