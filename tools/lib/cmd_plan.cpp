// tpusim plan STUDY.json: searches the layouts of a study's model, slice and batch; prunes the
// invalid, those that do not fit in HBM and those a lower bound shows cannot win; simulates the
// rest through the sweep runner (one process each, resumable); reports the top K, the Pareto
// front and the winner as a study. docs/plan.md.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

#include "core/errors.hpp"
#include "core/params.hpp"
#include "tools/lib/commands.hpp"
#include "tools/lib/plan_candidates.hpp"
#include "tools/lib/plan_output.hpp"
#include "tools/lib/study.hpp"
#include "tools/lib/sweep_dir.hpp"
#include "tools/lib/sweep_progress.hpp"
#include "tools/lib/sweep_runner.hpp"
#include "tools/plan/search.hpp"
#include "tools/plan/space.hpp"
#include "tools/sweep/expand.hpp"

namespace tpusim::cli {
namespace {
namespace fs = std::filesystem;

struct PlanArgs {
  std::string study_file;
  std::vector<std::string> sets;
  std::vector<std::string> space;
  std::string batch_per_chip;
  int jobs = 1;
  int top = 5;
  std::string objective = "step_time";
  std::string out_dir;
  bool json = false;
};

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  return buf;
}

plan::Evaluated evaluated(const Survivor& s, std::size_t index) {
  return {index,
          s.check.bound.step_ms(),
          s.check.peak_bytes,
          s.check.examples_per_step,
          s.check.chips,
          std::nullopt};
}

/// The winner as a ready-to-run study: the user's file and --set values with the winner's
/// layout written over them.
nlohmann::json winner_study(const PlanArgs& a, const plan::SearchSpace& space, const Survivor& w) {
  nlohmann::json doc = read_json_file(a.study_file);
  for (const auto& s : a.sets) apply_set(doc, s);
  for (std::size_t i = 0; i < space.axes.size(); ++i)
    json_set(doc, space.axes[i].path, w.candidate.values[i]);
  doc["_about"] = "Chosen by tpusim plan from " + a.study_file + " (objective " + a.objective +
                  "): " + w.label + ".";
  return doc;
}

/// What the simulation stage found, per survivor (indices of CheckedSpace::survivors).
struct SearchResult {
  std::vector<plan::Evaluated> evals;  ///< step_ms set once simulated
  std::vector<nlohmann::json> reports;
  std::vector<bool> from_cache;
  std::size_t pruned = 0, cached = 0;
  bool interrupted = false;
};

/// Simulates the survivors in the order of their bound, `-j` at a time, through the sweep
/// runner into the results store a.out_dir; skips those the Pruner rules out (counted in
/// checked.rejected).
SearchResult simulate_in_bound_order(const PlanArgs& a, plan::Objective objective,
                                     const plan::SearchSpace& space, CheckedSpace& checked) {
  const std::vector<Survivor>& survivors = checked.survivors;
  Rejections& rejected = checked.rejected;
  // Best bound first: what is most likely to win is simulated first and tightens the pruning.
  SearchResult result;
  std::vector<plan::Evaluated>& evals = result.evals;
  for (std::size_t i = 0; i < survivors.size(); ++i) evals.push_back(evaluated(survivors[i], i));
  std::vector<std::size_t> order(evals.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return plan::cost(objective, evals[x], evals[x].bound_ms) <
           plan::cost(objective, evals[y], evals[y].bound_ms);
  });

  sweep::Plan store;
  store.sweep_file = a.study_file;
  store.columns = space.paths();
  std::vector<std::size_t> cached;
  for (std::size_t i : order) {
    const Survivor& s = survivors[i];
    if (sweep::read_outcome(a.out_dir, s.id).state == sweep::PointState::Ok) cached.push_back(i);
  }

  plan::Pruner pruner(objective, static_cast<std::size_t>(a.top));
  std::vector<nlohmann::json>& reports = result.reports;
  std::vector<bool>& from_cache = result.from_cache;
  reports.resize(survivors.size());
  from_cache.assign(survivors.size(), false);
  std::vector<std::size_t> point_of(survivors.size(), 0);  // survivor -> store point
  auto add_point = [&](std::size_t i) {
    point_of[i] = store.points.size();
    store.points.push_back({store.points.size(), survivors[i].id, survivors[i].candidate.values});
  };
  auto take_result = [&](std::size_t i) {
    const auto outcome = sweep::read_outcome(a.out_dir, survivors[i].id);
    if (outcome.state != sweep::PointState::Ok) {
      const std::string error = outcome.error.empty() ? "no result" : outcome.error;
      add_rejection(rejected, "simulation failed", survivors[i].label, error);
      if (survivors[i].is_study) checked.own_rejection = "simulation failed: " + error;
      return;
    }
    reports[i] = outcome.report;
    evals[i].step_ms = outcome.report["step_time_ms"].get<double>();
    pruner.add_simulated(evals[i]);
  };
  for (std::size_t i : cached) {
    from_cache[i] = true;
    add_point(i);
    take_result(i);
  }

  const std::size_t to_check = survivors.size() - cached.size();
  if (!cached.empty())
    std::cerr << "tpusim plan: " << cached.size() << " layouts already simulated in " << a.out_dir
              << ", reusing them\n";
  SweepProgress progress(to_check, 0, ::isatty(STDERR_FILENO) == 1);
  result.cached = cached.size();
  for (std::size_t next = 0; next < order.size();) {
    std::vector<std::size_t> wave;
    while (next < order.size() && static_cast<int>(wave.size()) < a.jobs) {
      const std::size_t i = order[next++];
      if (from_cache[i]) continue;
      const auto dominator = survivors[i].is_study ? std::nullopt : pruner.dominated_by(evals[i]);
      if (!dominator) {
        wave.push_back(i);
        continue;
      }
      ++result.pruned;
      progress.skipped(1);
      const plan::Evaluated& d = pruner.simulated()[*dominator];
      add_rejection(rejected, "skipped by bound", survivors[i].label,
                    "lower bound " + ms_text(evals[i].bound_ms) + "; at least " +
                        std::to_string(a.top) + " simulated layouts are better, and " +
                        survivors[d.candidate].label + " takes " + ms_text(*d.step_ms) +
                        " with no more memory");
    }
    if (wave.empty()) break;
    std::vector<std::size_t> indices;
    for (std::size_t i : wave) {
      add_point(i);
      indices.push_back(point_of[i]);
      sweep::write_file_atomic(sweep::study_file(a.out_dir, survivors[i].id),
                               survivors[i].check.resolved.dump(1) + "\n");
    }
    write_plan(a.out_dir, store);
    const RunnerSummary summary = run_points(store, indices, {a.out_dir, a.jobs}, progress, [] {});
    if (summary.interrupted) {
      progress.close();
      write_results(a.out_dir, store);
      std::cerr << "tpusim plan: interrupted; simulated layouts are kept in " << a.out_dir
                << ", rerun the same command to go on\n";
      result.interrupted = true;
      return result;
    }
    for (std::size_t i : wave) take_result(i);
  }
  progress.close();
  write_plan(a.out_dir, store);
  write_results(a.out_dir, store);
  return result;
}

/// The plan as JSON (docs/plan.md), without the winner (run_plan adds it).
nlohmann::json plan_json(const PlanArgs& a, plan::Objective objective,
                         const plan::SearchSpace& space, const CheckedSpace& checked,
                         const SearchResult& result, const nlohmann::json& base, long long chips,
                         const plan::Candidate& own, bool own_in_space) {
  const std::vector<Survivor>& survivors = checked.survivors;
  const std::vector<plan::Evaluated>& evals = result.evals;
  const std::vector<nlohmann::json>& reports = result.reports;
  const std::vector<bool>& from_cache = result.from_cache;
  const Rejections& rejected = checked.rejected;
  const std::size_t total = checked.total, pruned = result.pruned;
  const auto top = plan::top_k(objective, evals, static_cast<std::size_t>(a.top));
  const auto ranked = plan::top_k(objective, evals, evals.size());
  nlohmann::json out;
  out["schema_version"] = kPlanSchemaVersion;
  out["study"] = a.study_file;
  out["model"] = base.at("workload").at("model");
  out["chips"] = chips;
  out["objective"] = plan::to_string(objective);
  out["space"] = nlohmann::json::object();
  for (const auto& axis : space.axes) out["space"][axis.path] = axis.values;
  out["candidates"] = nlohmann::json::object();
  for (std::size_t r = 0; r < ranked.size(); ++r) {
    const std::size_t i = ranked[r];
    const Survivor& s = survivors[i];
    const auto& rep = reports[i];
    nlohmann::json values = nlohmann::json::object();
    for (std::size_t k = 0; k < space.axes.size(); ++k)
      values[space.axes[k].path] = s.candidate.values[k];
    out["candidates"][s.id] = {
        {"id", s.id},
        {"rank", r + 1},
        {"layout", s.label},
        {"values", values},
        {"study_layout", s.is_study},
        {"equivalent_layouts", s.equivalents},
        {"from_earlier_run", static_cast<bool>(from_cache[i])},
        {"step_time_ms", *evals[i].step_ms},
        {"examples_per_s_per_chip", rep["examples_per_s"].get<double>() / s.check.chips},
        {"comm_share", rep["comm_share"]},
        {"exposed_comm_share", rep["exposed_comm_share"]},
        {"peak_memory_bytes", s.check.peak_bytes},
        {"bound_ms", evals[i].bound_ms},
        {"bound_compute_ms", s.check.bound.compute_ms},
        {"bound_bisection_ms", s.check.bound.bisection_ms},
        {"study_file", sweep::study_file(a.out_dir, s.id)}};
  }
  auto ids = [&](const std::vector<std::size_t>& list) {
    nlohmann::json j = nlohmann::json::array();
    for (std::size_t i : list) j.push_back(survivors[i].id);
    return j;
  };
  out["top"] = ids(top);
  out["pareto"] = ids(plan::pareto_front(objective, evals));
  out["rejected"] = nlohmann::json::array();
  std::size_t invalid = 0, oom = 0, failed = 0, equivalent = 0;
  for (const auto& [cls, r] : rejected) {
    out["rejected"].push_back(
        {{"class", cls}, {"count", r.count}, {"example", r.example}, {"reason", r.reason}});
    if (cls.rfind("invalid", 0) == 0) invalid += r.count;
    if (cls == "does not fit in HBM") oom += r.count;
    if (cls == "simulation failed") failed += r.count;
    if (cls == "same Program as another layout") equivalent += r.count;
  }
  out["counts"] = {
      {"candidates", total},     {"invalid", invalid},       {"oom", oom},
      {"pruned", pruned},        {"equivalent", equivalent}, {"simulated", ranked.size()},
      {"cached", result.cached}, {"failed", failed}};
  nlohmann::json own_json = {{"layout", plan::candidate_label(space, own.values)}};
  if (!own_in_space) own_json["status"] = "outside the searched space (--space)";
  for (std::size_t r = 0; r < ranked.size(); ++r)
    if (survivors[ranked[r]].is_study) {
      own_json["rank"] = r + 1;
      own_json["step_time_ms"] = *evals[ranked[r]].step_ms;
      own_json["id"] = survivors[ranked[r]].id;
    }
  if (!own_json.contains("rank") && own_in_space) own_json["status"] = checked.own_rejection;
  out["study_layout"] = own_json;
  return out;
}

void run_plan(PlanArgs a) {
  const plan::Objective objective = plan::parse_objective(a.objective);
  const Study study = load_study_file(a.study_file, a.sets);
  const nlohmann::json& base = study.config.json();
  const long long chips = static_cast<long long>(Topology(study.topology).num_chips());
  const int cores = static_cast<int>(chips * study.hardware.cores_per_chip);
  plan::SearchSpace space = plan::default_space(study.config, cores);
  if (!a.batch_per_chip.empty()) {
    if (objective == plan::Objective::StepTime)
      throw ConfigError("--batch-per-chip",
                        "compares different batches, which step time cannot; "
                        "add --objective examples_per_s_per_chip");
    plan::set_batch_per_chip(space, a.batch_per_chip, chips);
  }
  for (const auto& s : a.space) plan::override_axis(space, s, study.config);
  // The study's own layout joins the search (to show where it ranks) unless a --space option
  // left out one of its values.
  const plan::Candidate own = plan::candidate_of(space, base);
  bool own_in_space = true;
  for (std::size_t i = 0; i < space.axes.size(); ++i)
    for (const auto& s : a.space)
      if (s.rfind(space.axes[i].path + "=", 0) == 0)
        own_in_space = own_in_space && std::count(space.axes[i].values.begin(),
                                                  space.axes[i].values.end(), own.values[i]) > 0;

  CheckedSpace checked = check_space(space, base, own_in_space ? &own : nullptr);
  const Rejections& rejected = checked.rejected;
  const std::size_t total = checked.total;
  if (checked.survivors.empty()) {
    if (checked.smallest_oom_peak > 0)
      throw ConfigError("plan", "no layout of the " + std::to_string(total) +
                                    " fits in HBM; the smallest peak is " +
                                    format_bytes(checked.smallest_oom_peak) + " per core (" +
                                    checked.smallest_oom_label + ") against " +
                                    format_bytes(study.hardware.hbm_bytes_per_core));
    std::string classes;
    for (const auto& [cls, r] : rejected)
      classes += (classes.empty() ? "" : "; ") + std::to_string(r.count) + " " + cls + " (" +
                 r.reason + ")";
    throw ConfigError("plan", "no valid layout among the " + std::to_string(total) +
                                  " of the search space: " + classes);
  }

  if (a.out_dir.empty()) a.out_dir = "plan_" + fs::path(a.study_file).stem().string();
  // Held until the plan's files are written: a second plan or sweep into the same directory
  // stops at once instead of overwriting this one's points.
  const SweepDirLock lock = make_sweep_dir(a.out_dir);
  const SearchResult result = simulate_in_bound_order(a, objective, space, checked);
  if (result.interrupted) {
    set_exit_code(1);
    return;
  }
  const auto top = plan::top_k(objective, result.evals, 1);
  if (top.empty()) {  // every simulation failed: a failed run, not bad input
    std::cerr << "tpusim plan: no layout could be simulated; the errors are in " << a.out_dir
              << "/points/*.error.json\n";
    set_exit_code(1);
    return;
  }
  nlohmann::json out =
      plan_json(a, objective, space, checked, result, base, chips, own, own_in_space);
  const Survivor& w = checked.survivors[top.front()];
  const std::string winner_file = a.out_dir + "/winner.study.json";
  sweep::write_file_atomic(winner_file, winner_study(a, space, w).dump(2) + "\n");
  out["winner"] = {{"id", w.id}, {"layout", w.label}, {"study_file", winner_file}};
  sweep::write_file_atomic(a.out_dir + "/plan.json", out.dump(1) + "\n");
  if (a.json)
    std::cout << out.dump(2) << "\n";
  else
    print_plan(std::cout, out);
  std::cerr << "tpusim plan: results in " << a.out_dir << "/plan.json and results.csv\n";
}

const CommandRegistrar kRegister{[](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plan", "Search the layouts of a study for the fastest that fits (see docs/plan.md)");
  auto a = std::make_shared<PlanArgs>();
  cmd->add_option("study", a->study_file, "study JSON: model, topology, hardware, global batch")
      ->required();
  cmd->add_option("--set", a->sets, "override path=value in the study (repeatable)");
  cmd->add_option("--space", a->space,
                  "candidate values of one axis: PATH=V1,V2,... (repeatable; one value fixes it)");
  cmd->add_option("--batch-per-chip", a->batch_per_chip,
                  "search global batches chips x LO, 2 LO, ... up to HI (LO:HI)");
  cmd->add_option("-j,--jobs", a->jobs, "simulations run at the same time")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--top", a->top, "layouts to list (and to keep out of the pruning)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--objective", a->objective, "step_time or examples_per_s_per_chip");
  cmd->add_option("--out", a->out_dir, "results store (default plan_<name of the study>)");
  cmd->add_flag("--json", a->json, "print the plan as one JSON object");
  cmd->callback([a] { run_plan(*a); });
}};

}  // namespace
}  // namespace tpusim::cli
