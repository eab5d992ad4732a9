#pragma once
// Runs sweep points, each in its own process (`tpusim run POINT.study.json --json`, forked from
// the command's fork server, tools/launch/fork_server.hpp; SystemC elaborates one design per
// process), at most `jobs` at a time. Each result is written atomically as soon as its process
// ends. SIGINT, SIGTERM and SIGHUP stop the running children and keep what finished; children
// die with the runner (PR_SET_PDEATHSIG) even if it is killed outright.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tools/sweep/results.hpp"

namespace tpusim::launch {
class ForkServer;
}

namespace tpusim::cli {

class SweepProgress;

struct RunnerOptions {
  std::string out_dir;
  int jobs = 1;
  std::string command = "run";  ///< the tpusim command each point runs: run, train or serve
  /// Forks the points' processes: started by the command while it had one thread.
  launch::ForkServer* server = nullptr;
};

struct RunnerSummary {
  std::size_t ok = 0, oom = 0, failed = 0;
  bool interrupted = false;
};

/// Runs the points `todo` (indices into plan.points); calls `on_finish(index)` after each point's
/// file is written (the sweep appends the point's row to results.csv there).
RunnerSummary run_points(const sweep::Plan& plan, const std::vector<std::size_t>& todo,
                         const RunnerOptions& options, SweepProgress& progress,
                         const std::function<void(std::size_t)>& on_finish);

/// What the feeder of run_points_fed answers when a process slot is free.
struct NextPoint {
  std::optional<std::size_t> index;  ///< a point of plan.points to start now
  bool done = false;                 ///< no more points will be given
  /// `index` starts on trial: it runs, but its result is held (not written, not shown, no
  /// on_finish) until the feeder settles it. One point at a time may be on trial.
  bool trial = false;
  /// The point on trial, settled now (before `index` starts): kept (its result is written when
  /// it ends, or now if it has) or dropped (stopped if it runs, its files removed, nothing shown).
  std::optional<std::size_t> settled;
  bool keep = false;
};

/// Runs points as `next` gives them (tpusim plan decides each from the results so far): `next`
/// is asked whenever fewer than options.jobs run, and again after each point finishes when it
/// gave none (it may give none only while a point runs, or one on trial waits to be settled).
/// `next` may append to plan.points.
RunnerSummary run_points_fed(const sweep::Plan& plan, const std::function<NextPoint()>& next,
                             const RunnerOptions& options, SweepProgress& progress,
                             const std::function<void(std::size_t)>& on_finish);

}  // namespace tpusim::cli
