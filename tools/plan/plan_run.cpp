#include "tools/plan/plan_run.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "core/params.hpp"
#include "tools/plan/candidates.hpp"
#include "tools/plan/explain.hpp"
#include "tools/plan/output.hpp"
#include "tools/plan/search.hpp"
#include "tools/plan/space.hpp"
#include "tools/study/study.hpp"
#include "tools/sweep/expand.hpp"
#include "tools/sweep/sweep_dir.hpp"
#include "tools/sweep/sweep_progress.hpp"
#include "tools/sweep/sweep_runner.hpp"
#include "traces/format/program_file.hpp"

namespace tpusim::cli {
namespace {
namespace fs = std::filesystem;

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  return buf;
}

plan::Evaluated evaluated(const Survivor& s, std::size_t index) {
  return {index,         s.check.bound.step_ms(), s.check.peak_bytes,  s.check.examples_per_step,
          s.check.chips, s.check.tokens_per_step, s.check.model_flops, s.check.peak_flops_per_chip,
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

/// The memory-saving keys the study declares that the space does not search.
std::vector<std::string> unsearched_memory_keys(const Study& study,
                                                const plan::SearchSpace& space) {
  std::vector<std::string> keys;
  const auto paths = space.paths();
  for (const auto& k : plan::memory_saving_keys())
    if (study.config.has(k) && std::find(paths.begin(), paths.end(), k) == paths.end())
      keys.push_back(k);
  return keys;
}

/// What the simulation stage found, per survivor (indices of CheckedSpace::survivors).
struct SearchResult {
  std::vector<plan::Evaluated> evals;  ///< step_ms set once simulated
  std::vector<nlohmann::json> reports;
  std::vector<bool> from_cache;
  std::size_t pruned = 0, cached = 0;
  bool interrupted = false;
};

/// Builds deferred survivors' whole Programs (check_candidate) on a thread of its own, in the
/// order they are asked for, so that the search finds them built when it reaches them: while
/// the simulations run, the search itself only waits for their ends.
class WholeBuilds {
 public:
  explicit WholeBuilds(const std::vector<Survivor>& survivors)
      : survivors_(survivors), state_(survivors.size(), State::None), built_(survivors.size()) {}
  ~WholeBuilds() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  WholeBuilds(const WholeBuilds&) = delete;
  WholeBuilds& operator=(const WholeBuilds&) = delete;

  /// Builds survivor `i` ahead unless it is asked for already.
  void ahead(std::size_t i) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (state_[i] != State::None) return;
      state_[i] = State::Queued;
      queue_.push_back(i);
      if (!thread_.joinable()) thread_ = std::thread([this] { work(); });
    }
    wake_.notify_all();
  }
  /// Survivor `i`'s whole check: built ahead (waiting for it if need be) or here.
  CandidateCheck take(std::size_t i) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (state_[i] == State::None || state_[i] == State::Queued) {
      if (state_[i] == State::Queued) queue_.erase(std::find(queue_.begin(), queue_.end(), i));
      state_[i] = State::Taken;
      lock.unlock();
      return build(i);
    }
    wake_.wait(lock, [&] { return state_[i] == State::Built; });
    state_[i] = State::Taken;
    if (built_[i].error) std::rethrow_exception(built_[i].error);
    return std::move(built_[i].check);
  }

 private:
  enum class State { None, Queued, Building, Built, Taken };
  struct Built {
    CandidateCheck check;
    std::exception_ptr error;  ///< a bug's exception, rethrown by take
  };

  CandidateCheck build(std::size_t i) {
    return check_candidate(survivors_[i].candidate.study, &graphs_, Build::Kept);
  }

  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      const std::size_t i = queue_.front();
      queue_.pop_front();
      state_[i] = State::Building;
      lock.unlock();
      Built b;
      try {
        b.check = build(i);
      } catch (...) {
        b.error = std::current_exception();
      }
      lock.lock();
      built_[i] = std::move(b);
      state_[i] = State::Built;
      wake_.notify_all();
    }
  }

  const std::vector<Survivor>& survivors_;
  OpGraphCache graphs_{8};  // the whole depth of a few batches at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::size_t> queue_;
  std::vector<State> state_;
  std::vector<Built> built_;
  bool stop_ = false;
  std::thread thread_;
};

/// Simulates the survivors in the order of their bound, `-j` at a time, through the sweep
/// runner into the results store a.out_dir; skips those the Pruner rules out (counted in
/// checked.rejected). A deferred survivor (CandidateCheck::deferred) that its lower bounds do not
/// skip is built whole when reached: it may then not fit, be skipped on its exact bound, or have
/// the Program of a layout met before.
class BoundOrderSearch {
 public:
  BoundOrderSearch(const PlanArgs& a, plan::Objective objective, const plan::SearchSpace& space,
                   CheckedSpace& checked)
      : a_(a),
        survivors_(checked.survivors),
        checked_(checked),
        rejected_(checked.rejected),
        pruner_(objective, static_cast<std::size_t>(a.top)),
        whole_(checked.survivors),
        point_of_(checked.survivors.size(), 0),
        finished_(checked.survivors.size(), false) {
    // Best bound first: what is most likely to win is simulated first and tightens the pruning.
    std::vector<plan::Evaluated>& evals = result_.evals;
    for (std::size_t i = 0; i < survivors_.size(); ++i)
      evals.push_back(evaluated(survivors_[i], i));
    order_.resize(evals.size());
    for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t x, std::size_t y) {
      return plan::cost(objective, evals[x], evals[x].bound_ms) <
             plan::cost(objective, evals[y], evals[y].bound_ms);
    });
    store_.sweep_file = a.study_file;
    store_.columns = space.paths();
    for (std::size_t i = 0; i < survivors_.size(); ++i)
      if (!survivors_[i].check.deferred) owner_.emplace(program_key(survivors_[i].check), i);
    result_.reports.resize(survivors_.size());
    result_.from_cache.assign(survivors_.size(), false);
  }

  SearchResult run() {
    std::vector<std::size_t> cached;
    for (std::size_t i : order_) {
      const Survivor& s = survivors_[i];
      if (sweep::read_outcome(a_.out_dir, s.id).state == sweep::PointState::Ok) cached.push_back(i);
    }
    // A cached result joins the pruner at the same place in the start order as in the run that
    // computed it: a killed and rerun plan makes the same pruning decisions as one uninterrupted
    // run.
    for (std::size_t i : cached) result_.from_cache[i] = true;
    const std::size_t to_check = survivors_.size() - cached.size();
    if (!cached.empty())
      std::cerr << "tpusim plan: " << cached.size() << " layouts already simulated in "
                << a_.out_dir << ", reusing them\n";
    SweepProgress progress(to_check, 0, ::isatty(STDERR_FILENO) == 1);
    result_.cached = cached.size();
    const RunnerSummary summary = run_points_fed(
        store_, [&] { return next_point(progress); }, {a_.out_dir, a_.jobs, "run", a_.server},
        progress, [&](std::size_t point) { finished_[survivor_of_point_[point]] = true; });
    if (summary.interrupted) {
      progress.close();
      write_results(a_.out_dir, store_);
      std::cerr << "tpusim plan: interrupted; simulated layouts are kept in " << a_.out_dir
                << ", rerun the same command to go on\n";
      result_.interrupted = true;
      return result_;
    }
    join(0);
    progress.close();
    write_plan(a_.out_dir, store_);
    write_results(a_.out_dir, store_);
    return result_;
  }

 private:
  void add_point(std::size_t i) {
    point_of_[i] = store_.points.size();
    survivor_of_point_.push_back(i);
    store_.points.push_back(
        {store_.points.size(), survivors_[i].id, survivors_[i].candidate.values});
  }

  void take_result(std::size_t i) {
    const auto outcome = sweep::read_outcome(a_.out_dir, survivors_[i].id);
    if (outcome.state != sweep::PointState::Ok) {
      const std::string error = outcome.error.empty() ? "no result" : outcome.error;
      add_rejection(rejected_, "simulation failed", survivors_[i].label, error);
      if (survivors_[i].is_study) checked_.own_rejection = "simulation failed: " + error;
      return;
    }
    result_.reports[i] = outcome.report;
    result_.evals[i].step_ms = outcome.report["step_time_ms"].get<double>();
    pruner_.add_simulated(result_.evals[i]);
  }

  /// The started layouts whose results the pruner does not have yet.
  std::vector<plan::Evaluated> unjoined() const {
    std::vector<plan::Evaluated> out;
    for (std::size_t k = joined_; k < started_.size(); ++k)
      out.push_back(result_.evals[started_[k]]);
    return out;
  }

  /// Gives the pruner the results of the started layouts in start order, all but the last
  /// `lag` started, as far as they have finished; true if all those have.
  bool join(std::size_t lag) {
    const std::size_t upto = started_.size() > lag ? started_.size() - lag : 0;
    while (joined_ < upto && finished_[started_[joined_]]) take_result(started_[joined_++]);
    return joined_ >= upto;
  }

  /// The next layout to simulate, for the runner. Each is decided as with the results of every
  /// layout started before it but the last -j - 1 (those may still run): whatever order the
  /// simulations end in, the same layouts are pruned. When an older running layout's result could
  /// still decide it, it runs on trial (NextPoint::trial) and is settled, kept or dropped, once
  /// that result is in. Layouts the bound rules out are skipped; cached ones take their place in
  /// the start order without running.
  NextPoint next_point(SweepProgress& progress) {
    const std::size_t lag = static_cast<std::size_t>(std::max(1, a_.jobs) - 1);
    NextPoint n;
    if (trial_) {
      // Decided as if it had waited: with the results of every layout started before it but the
      // last -j - 1 (join's count then includes the trial itself).
      if (!join(lag + 1)) return n;
      const std::size_t i = *trial_;
      trial_.reset();
      n.settled = point_of_[i];
      n.keep = !pruned(i, progress);
      if (!n.keep) unstart(i);
    }
    while (next_ < order_.size()) {
      const bool joined = join(lag);
      const std::size_t i = order_[next_];
      if (!result_.from_cache[i] && pruned(i, progress)) {  // more results only skip it too
        ++next_;
        continue;
      }
      if (survivors_[i].check.deferred && !build_whole(i, progress)) {
        ++next_;
        continue;
      }
      if (!result_.from_cache[i]) {
        if (pruned(i, progress)) {  // on the whole Program's bound and peak
          ++next_;
          continue;
        }
        // Before the older running layouts end, the decision is the one their results would give
        // unless they could still make it skippable: at their lower bounds (no result is below
        // its bound) they cannot. Then it runs on trial, decided when they have ended.
        if (!joined && !survivors_[i].is_study &&
            pruner_.could_be_dominated(result_.evals[i], unjoined()))
          n.trial = true;
      }
      ++next_;
      add_point(i);
      started_.push_back(i);
      if (result_.from_cache[i]) {
        finished_[i] = true;
        continue;
      }
      write_output_file(sweep::study_file(a_.out_dir, survivors_[i].id),
                        survivors_[i].check.resolved.dump(1) + "\n");
      // The Program the whole build made: the run plays it instead of building it again.
      if (survivors_[i].check.program)
        write_program_file(sweep::program_file(a_.out_dir, survivors_[i].id),
                           *survivors_[i].check.program, program_file_tag(survivors_[i].id));
      survivors_[i].check.program.reset();
      write_plan(a_.out_dir, store_);
      build_ahead();
      if (n.trial) trial_ = i;
      n.index = point_of_[i];
      return n;
    }
    n.done = true;
    return n;
  }

  /// Takes back the start of survivor `i`, the last started (on trial, then skipped): the runner
  /// has dropped its process and files.
  void unstart(std::size_t i) {
    started_.pop_back();
    survivor_of_point_.pop_back();
    store_.points.pop_back();
    std::remove(sweep::study_file(a_.out_dir, survivors_[i].id).c_str());
    write_plan(a_.out_dir, store_);
  }

  /// Builds deferred survivor `i`'s whole Program: false (counted and listed) if it does not fit
  /// or is another's, else its exact figures replace the screen's.
  bool build_whole(std::size_t i, SweepProgress& progress) {
    Survivor& s = survivors_[i];
    // A Program is kept only until its layout starts (next_point), not while others are decided.
    if (fresh_program_) survivors_[*fresh_program_].check.program.reset();
    fresh_program_ = i;
    s.check = whole_.take(i);
    if (!s.check.rejected_class.empty()) {
      reject(checked_, s);
      progress.skipped(1);
      return false;
    }
    const auto [it, fresh] = owner_.emplace(program_key(s.check), i);
    if (!fresh) {
      Survivor& kept = survivors_[it->second];
      kept.equivalents.push_back(s.label);
      add_rejection(rejected_, "same Program as another layout", s.label,
                    "builds the same Program as " + kept.label + ", simulated once for both");
      progress.skipped(1);
      return false;
    }
    const std::optional<double> step = result_.evals[i].step_ms;
    result_.evals[i] = evaluated(s, i);
    result_.evals[i].step_ms = step;
    return true;
  }

  /// Has the next few deferred survivors that the results so far do not skip built ahead.
  void build_ahead() {
    constexpr std::size_t kAhead = 3;
    std::size_t asked = 0;
    for (std::size_t k = next_; k < order_.size() && asked < kAhead; ++k) {
      const std::size_t i = order_[k];
      if (!survivors_[i].check.deferred) continue;
      if (!result_.from_cache[i] && !survivors_[i].is_study &&
          pruner_.dominated_by(result_.evals[i]))
        continue;
      ++asked;
      whole_.ahead(i);
    }
  }

  /// True (counted and listed) if the bound rules survivor `i` out.
  bool pruned(std::size_t i, SweepProgress& progress) {
    const plan::Evaluated& e = result_.evals[i];
    const auto dominator = survivors_[i].is_study ? std::nullopt : pruner_.dominated_by(e);
    if (!dominator) return false;
    ++result_.pruned;
    progress.skipped(1);
    const plan::Evaluated& d = pruner_.simulated()[*dominator];
    add_rejection(rejected_, "skipped by bound", survivors_[i].label,
                  "lower bound " + ms_text(e.bound_ms) + "; at least " + std::to_string(a_.top) +
                      " simulated layouts are better, and " + survivors_[d.candidate].label +
                      " takes " + ms_text(*d.step_ms) + " with no more memory");
    return true;
  }

  const PlanArgs& a_;
  std::vector<Survivor>& survivors_;
  CheckedSpace& checked_;
  Rejections& rejected_;
  SearchResult result_;
  std::vector<std::size_t> order_;
  sweep::Plan store_;
  plan::Pruner pruner_;
  WholeBuilds whole_;
  std::optional<std::size_t> fresh_program_;    // the last survivor built whole (its Program)
  std::map<std::string, std::size_t> owner_;    // program_key -> the survivor simulated for it
  std::vector<std::size_t> point_of_;           // survivor -> store point
  std::vector<std::size_t> survivor_of_point_;  // store point -> survivor
  std::vector<std::size_t> started_;            // survivors in the order they started
  std::vector<bool> finished_;                  // per survivor: its result is in the store
  std::size_t joined_ = 0;                      // started_[0, joined_) are in the pruner
  std::size_t next_ = 0;                        // order_[next_] is the next to decide
  std::optional<std::size_t> trial_;            // the survivor running on trial (NextPoint)
};

SearchResult simulate_in_bound_order(const PlanArgs& a, plan::Objective objective,
                                     const plan::SearchSpace& space, CheckedSpace& checked) {
  return BoundOrderSearch(a, objective, space, checked).run();
}

/// One simulated layout in the plan JSON (docs/plan.md, "candidates").
nlohmann::json candidate_json(const PlanArgs& a, const plan::SearchSpace& space, const Survivor& s,
                              const nlohmann::json& rep, const plan::Evaluated& e, std::size_t rank,
                              bool from_earlier_run) {
  auto rate = [&](plan::Objective o) { return plan::objective_value(o, e, *e.step_ms); };
  nlohmann::json values = nlohmann::json::object();
  for (std::size_t k = 0; k < space.axes.size(); ++k)
    values[space.axes[k].path] = s.candidate.values[k];
  return {{"id", s.id},
          {"rank", rank},
          {"layout", s.label},
          {"values", values},
          {"study_layout", s.is_study},
          {"equivalent_layouts", s.equivalents},
          {"from_earlier_run", from_earlier_run},
          {"step_time_ms", *e.step_ms},
          {"examples_per_s_per_chip", rep["examples_per_s"].get<double>() / s.check.chips},
          {"mfu", rate(plan::Objective::Mfu)},
          {"tokens_per_s_per_chip", rate(plan::Objective::TokensPerSPerChip)},
          {"comm_share", rep["comm_share"]},
          {"exposed_comm_share", rep["exposed_comm_share"]},
          {"compute_ms", rep.value("compute_ms", 0.0)},
          {"mxu_utilization", rep.value("mxu_utilization", 0.0)},
          {"peak_memory_bytes", s.check.peak_bytes},
          {"bound_ms", e.bound_ms},
          {"bound_compute_ms", s.check.bound.compute_ms},
          {"bound_bisection_ms", s.check.bound.bisection_ms},
          {"bound_critical_ms", s.check.bound.critical_ms},
          {"bound_ingress_ms", s.check.bound.ingress_ms},
          {"study_file", sweep::study_file(a.out_dir, s.id)}};
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
    out["candidates"][survivors[i].id] =
        candidate_json(a, space, survivors[i], reports[i], evals[i], r + 1, from_cache[i]);
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

/// Rates of a language model need its tokens and model FLOPs per step.
void check_objective(const PlanArgs& a, plan::Objective objective, const CheckedSpace& checked,
                     const nlohmann::json& base) {
  if (objective != plan::Objective::Mfu && objective != plan::Objective::TokensPerSPerChip) return;
  if (checked.survivors.empty()) return;
  const plan::Evaluated e = evaluated(checked.survivors.front(), 0);
  if (e.tokens_per_step > 0 && e.model_flops > 0) return;
  throw ConfigError("--objective " + a.objective,
                    "needs a language model (tokens and model FLOPs per step); " +
                        base.at("workload").at("model").get<std::string>() +
                        " does not count both; use step_time or examples_per_s_per_chip");
}

/// No layout is left to simulate: one error line saying why (and, when none fits, what may).
[[noreturn]] void throw_nothing_to_simulate(const CheckedSpace& checked, const Study& study,
                                            const plan::SearchSpace& space) {
  if (checked.smallest_oom_peak > 0)
    throw ConfigError(
        "plan", "no layout of the " + std::to_string(checked.total) +
                    " fits in HBM; the smallest peak is " +
                    format_bytes(checked.smallest_oom_peak) + " per core (" +
                    checked.smallest_oom_label + ") against " +
                    format_bytes(study.hardware.hbm_bytes_per_core) +
                    plan::what_would_fit(checked.oom_peaks, unsearched_memory_keys(study, space)));
  std::string classes;
  for (const auto& [cls, r] : checked.rejected)
    classes +=
        (classes.empty() ? "" : "; ") + std::to_string(r.count) + " " + cls + " (" + r.reason + ")";
  throw ConfigError("plan", "no valid layout among the " + std::to_string(checked.total) +
                                " of the search space: " + classes);
  throw std::logic_error("tpusim bug: no layout to simulate and no reason");
}

}  // namespace

int run_plan(PlanArgs a) {
  const plan::Objective objective = plan::parse_objective(a.objective);
  if (!(a.tie_percent >= 0 && a.tie_percent <= 100))
    throw ConfigError("--tie", "must be a percentage from 0 to 100, e.g. --tie 2");
  const Study study = load_study_file(a.study_file, a.sets);
  const nlohmann::json& base = study.config.json();
  // Every slice's chips, as a run counts them (a multislice study's rates are per chip of all).
  const Topology topology(study.topology);
  const long long chips = static_cast<long long>(topology.num_chips()) * topology.slices();
  const int cores = static_cast<int>(chips * study.hardware.devices_per_chip);
  plan::SearchSpace space = plan::default_space(study.config, cores);
  if (!a.batch_per_chip.empty()) {
    if (objective == plan::Objective::StepTime)
      throw ConfigError("--batch-per-chip",
                        "compares different batches, which step time cannot; "
                        "add --objective examples_per_s_per_chip");
    plan::set_batch_per_chip(space, a.batch_per_chip, chips);
  }
  plan::override_axes(space, a.space, study.config);
  // The study's own layout joins the search (to show where it ranks) unless a --space option
  // left out one of its values.
  const plan::Candidate own = plan::candidate_of(space, base);
  bool own_in_space = true;
  for (std::size_t i = 0; i < space.axes.size(); ++i)
    for (const auto& s : a.space)
      if (s.rfind(space.axes[i].path + "=", 0) == 0)
        own_in_space = own_in_space && std::count(space.axes[i].values.begin(),
                                                  space.axes[i].values.end(), own.values[i]) > 0;

  const auto check_start = std::chrono::steady_clock::now();
  CheckedSpace checked =
      check_space(space, base, own_in_space ? &own : nullptr, a.jobs, ::isatty(STDERR_FILENO) == 1);
  const double check_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start).count();
  check_objective(a, objective, checked, base);
  if (checked.survivors.empty()) throw_nothing_to_simulate(checked, study, space);

  if (a.out_dir.empty()) a.out_dir = "out/plan_" + fs::path(a.study_file).stem().string();
  // Held until the plan's files are written: a second plan or sweep into the same directory
  // stops at once instead of overwriting this one's points.
  const SweepDirLock lock = make_sweep_dir(a.out_dir);
  if (::isatty(STDERR_FILENO) == 1) {  // on a terminal, as the progress line; quiet when piped
    const auto deferred = std::count_if(checked.survivors.begin(), checked.survivors.end(),
                                        [](const Survivor& s) { return s.check.deferred; });
    std::cerr << "tpusim plan: checked " << checked.total << " layouts in "
              << fmt::format("{:.2f}", check_s) << " s (" << checked.survivors.size()
              << " valid and distinct; " << deferred
              << " of them passed the memory screen and are built whole if their bounds do not "
                 "skip them)\n";
  }
  const SearchResult result = simulate_in_bound_order(a, objective, space, checked);
  if (result.interrupted) return 1;
  const auto top = plan::top_k(objective, result.evals, 1);
  // Every layout the screen passed turned out not to fit once built whole.
  if (top.empty() && !checked.rejected.count("simulation failed"))
    throw_nothing_to_simulate(checked, study, space);
  if (top.empty()) {  // every simulation failed: a failed run, not bad input
    std::cerr << "tpusim plan: no layout could be simulated; the errors are in " << a.out_dir
              << "/points/*.error.json\n";
    return 1;
  }
  nlohmann::json out =
      plan_json(a, objective, space, checked, result, base, chips, own, own_in_space);
  const Survivor& w = checked.survivors[top.front()];
  const std::string winner_file = a.out_dir + "/winner.study.json";
  write_output_file(winner_file, winner_study(a, space, w).dump(2) + "\n");
  out["winner"] = {{"id", w.id}, {"layout", w.label}, {"study_file", winner_file}};
  out["winner"]["explanation"] =
      plan::explain_winner(out["candidates"], w.id, plan::to_string(objective), a.tie_percent);
  write_output_file(a.out_dir + "/plan.json", out.dump(1) + "\n");
  if (a.json)
    std::cout << out.dump(2) << "\n";
  else
    print_plan(std::cout, out);
  std::cerr << "tpusim plan: results in " << a.out_dir << "/plan.json and results.csv\n";
  return 0;
}

}  // namespace tpusim::cli
