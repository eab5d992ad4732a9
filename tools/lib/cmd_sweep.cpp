// tpusim sweep: runs every point of a sweep file in its own process, N at a time, resumable,
// shardable, with optional regression check against a golden CSV.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "core/errors.hpp"
#include "models/train_schedule.hpp"
#include "models/workload.hpp"
#include "tools/lib/commands.hpp"
#include "tools/lib/readable.hpp"
#include "tools/lib/study.hpp"
#include "tools/lib/sweep_dir.hpp"
#include "tools/lib/sweep_progress.hpp"
#include "tools/lib/sweep_runner.hpp"
#include "tools/sweep/expand.hpp"
#include "tools/sweep/golden.hpp"

namespace tpusim::cli {
namespace {
namespace fs = std::filesystem;

struct SweepArgs {
  std::string sweep_file;
  int jobs = 1;
  std::string out_dir;
  std::string shard = "1/1";
  std::string golden;
  std::string tolerance = "2%";
  bool update_golden = false;
  std::vector<std::string> sets;
};

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

void run_sweep(SweepArgs a) {
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
  sweep::parse_tolerance(a.tolerance);  // bad input fails before anything runs

  const sweep::SweepSpec spec = sweep::load_sweep_file(a.sweep_file);
  // Every check of `tpusim validate` (config, layout, program) for every point, before any runs.
  const bool train = spec.command == "train";
  const auto points = sweep::expand(spec, a.sets, [train](const nlohmann::json& doc) {
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
  if (a.out_dir.empty()) a.out_dir = "sweep_" + fs::path(a.sweep_file).stem().string();

  sweep::Plan plan;
  plan.sweep_file = a.sweep_file;
  plan.columns = spec.column_names();
  plan.series_axes = spec.series_axes();
  plan.shard = shard;
  plan.shard_count = shard_count;
  plan.sets = a.sets;
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
    sweep::write_file_atomic(sweep::study_file(a.out_dir, p.id), p.resolved.dump(1) + "\n");
    todo.push_back(idx);
  }
  write_results(a.out_dir, plan);

  const std::size_t own = done + todo.size();
  SweepProgress progress(own, done, ::isatty(STDERR_FILENO) == 1);
  RunnerSummary summary = run_points(plan, todo, {a.out_dir, a.jobs, spec.command}, progress,
                                     [&] { write_results(a.out_dir, plan); });
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
    set_exit_code(1);
    return;
  }
  bool passed = all_ok;
  if (!a.golden.empty()) passed = check_golden(a, table, all_ok) && passed;
  set_exit_code(passed ? 0 : 1);
}

const CommandRegistrar kRegister{[](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sweep", "Run every point of a sweep file, each in its own process (see docs/studies.md)");
  auto a = std::make_shared<SweepArgs>();
  cmd->add_option("sweep", a->sweep_file, "sweep file (JSON): base study and axes")->required();
  cmd->add_option("-j,--jobs", a->jobs, "points run at the same time")->check(CLI::Range(1, 1024));
  cmd->add_option("--out", a->out_dir, "output directory (default sweep_<name of the sweep file>)");
  cmd->add_option("--shard", a->shard, "run only shard I of N (1-based), e.g. 2/4");
  cmd->add_option("--check", a->golden, "compare step time and comm share with this golden CSV");
  cmd->add_option("--tolerance", a->tolerance, "allowed drift for --check (default 2%)");
  cmd->add_flag("--update-golden", a->update_golden, "rewrite the --check file from this run");
  cmd->add_option("--set", a->sets, "override path=value in every point's base study (repeatable)");
  cmd->callback([a] { run_sweep(*a); });
}};

}  // namespace
}  // namespace tpusim::cli
