#include "tools/sweep/sweep_runner.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "core/output_file.hpp"
#include "tools/launch/fork_server.hpp"
#include "tools/sweep/expand.hpp"
#include "tools/sweep/sweep_progress.hpp"

namespace tpusim::cli {
namespace {

// Set by the signal handler only; read by the loop. The one piece of process-wide state a
// signal handler needs.
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, &old_[s]);
  }
  ~StopSignals() {
    for (auto& [s, old] : old_) sigaction(s, &old, nullptr);
  }

 private:
  std::map<int, struct sigaction> old_;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The last non-empty lines of a child's stderr: the error the user needs.
std::string error_tail(const std::string& err) {
  std::vector<std::string> lines;
  std::istringstream in(err);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) lines.push_back(l);
  std::string out;
  for (std::size_t i = lines.size() > 3 ? lines.size() - 3 : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

struct Running {
  std::size_t index;
  std::string id;  ///< its point's id (a dropped point may leave plan.points at once)
  std::chrono::steady_clock::time_point start;
  bool trial = false;    ///< its result waits for the feeder to settle it (NextPoint::trial)
  bool dropped = false;  ///< settled as dropped while it ran: stopped, its end forgotten
};

/// A point on trial that ended before it was settled: its end, as the runner saw it.
struct Held {
  std::size_t index;
  std::string id;
  int status;
  double seconds;
};

/// Starts `tpusim COMMAND STUDY --json`, with `--program PROGRAM` if that file exists (plan
/// wrote it), stdout and stderr to the given files, in a child of the fork server.
pid_t spawn(launch::ForkServer& server, const std::string& command, const std::string& study,
            const std::string& program, const std::string& out_path, const std::string& err_path) {
  std::vector<std::string> argv{"tpusim", command, study, "--json"};
  if (::access(program.c_str(), R_OK) == 0) argv.insert(argv.end(), {"--program", program});
  return server.launch(argv, out_path, err_path);
}

/// Why a finished point failed ("" if it did not): its exit, or what its report lacks. Sets
/// `report` (the point's stdout as JSON) and `oom` (a report of a program that does not fit).
std::string point_problem(int status, const std::string& out, nlohmann::json& report, bool& oom) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 1) {
    report = nlohmann::json::parse(out, nullptr, false);
    oom = report.is_object() && report.value("out_of_memory", false) &&
          sweep::check_oom_report(report).empty();
  }
  if (oom) return "";  // a result: written like a successful point
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  if (WEXITSTATUS(status) != 0) return "exit code " + std::to_string(WEXITSTATUS(status));
  report = nlohmann::json::parse(out, nullptr, false);
  return report.is_discarded() ? "stdout is not JSON" : sweep::check_report(report);
}

std::string point_label(const sweep::Plan& plan, const sweep::PlanPoint& p) {
  std::string l;
  for (std::size_t i = 0; i < plan.columns.size(); ++i)
    l += (l.empty() ? "" : " ") + plan.columns[i] + "=" + sweep::value_text(p.values[i]);
  return "point " + std::to_string(p.index) + " [" + l + "]";
}

/// The progress line's summary of a point's result.
std::string result_text(const nlohmann::json& report, bool oom) {
  char buf[160];
  if (oom)
    std::snprintf(buf, sizeof buf, "out of memory: peak %.3g GiB of %.3g GiB",
                  report["memory"]["peak_bytes"].get<double>() / 1073741824.0,
                  report["memory"]["capacity_bytes"].get<double>() / 1073741824.0);
  else if (report.contains("ttft_ms"))
    std::snprintf(buf, sizeof buf, "p99 TTFT %.4g ms, p99 TPOT %.4g ms, %.4g requests/s",
                  report["ttft_ms"]["p99"].get<double>(), report["tpot_ms"]["p99"].get<double>(),
                  report["requests_per_s"].get<double>());
  else if (report.contains("time_to_train_s"))
    std::snprintf(buf, sizeof buf, "time to train %.4g s, step %.4g ms",
                  report["time_to_train_s"].get<double>(), report["step_time_ms"].get<double>());
  else
    std::snprintf(buf, sizeof buf, "step %.4g ms, comm share %.1f%%",
                  report["step_time_ms"].get<double>(), 100 * report["comm_share"].get<double>());
  return buf;
}

}  // namespace

RunnerSummary run_points(const sweep::Plan& plan, const std::vector<std::size_t>& todo,
                         const RunnerOptions& options, SweepProgress& progress,
                         const std::function<void(std::size_t)>& on_finish) {
  std::deque<std::size_t> queue(todo.begin(), todo.end());
  auto next = [&queue]() -> NextPoint {
    if (queue.empty()) return {std::nullopt, true};
    const std::size_t i = queue.front();
    queue.pop_front();
    return {i, false};
  };
  return run_points_fed(plan, next, options, progress, on_finish);
}

namespace {

/// One run of run_points_fed: the running points, the trial held, the summary.
class PointRunner {
 public:
  PointRunner(const sweep::Plan& plan, const RunnerOptions& options, SweepProgress& progress,
              const std::function<void(std::size_t)>& on_finish)
      : plan_(plan),
        options_(options),
        dir_(options.out_dir),
        progress_(progress),
        on_finish_(on_finish),
        server_(*options.server) {}

  RunnerSummary run(const std::function<NextPoint()>& next) {
    StopSignals signals;
    bool done = false;
    while (!g_stop_signal) {
      while (!done && busy() < options_.jobs) {
        const NextPoint n = next();
        done = n.done;
        if (n.settled) settle(*n.settled, n.keep);
        if (!n.index) break;
        const auto& p = plan_.points[*n.index];
        const pid_t pid = spawn(server_, options_.command, sweep::study_file(dir_, p.id),
                                sweep::program_file(dir_, p.id), tmp_out(p.id), tmp_err(p.id));
        running_[pid] = {*n.index, p.id, std::chrono::steady_clock::now(), n.trial};
      }
      if (running_.empty()) {
        if (done) break;
        throw std::logic_error("tpusim bug: a sweep's feeder waits for a result with none running");
      }
      // The wait ends as soon as a point does: the next starts (and a plan decides it) at once.
      if (const auto ended = server_.wait(100); ended && running_.count(ended->first)) {
        finish(ended->first, ended->second);
        continue;
      }
      progress_.tick(running_.size());
    }
    if (g_stop_signal) {
      summary_.interrupted = true;
      stop_running();
    }
    if (held_) remove_files(held_->id);  // never settled: still to do
    return summary_;
  }

 private:
  std::string tmp_out(const std::string& id) const { return dir_ + "/points/" + id + ".out.tmp"; }
  std::string tmp_err(const std::string& id) const { return dir_ + "/points/" + id + ".err.tmp"; }

  /// A point's process files, once it has ended: its result is read from them first.
  void remove_files(const std::string& id) const {
    std::remove(tmp_out(id).c_str());
    std::remove(tmp_err(id).c_str());
    std::remove(sweep::program_file(dir_, id).c_str());
  }

  /// Writes and shows the result of point `index`, which ended with `status`.
  void report(std::size_t index, int status, double seconds) {
    const sweep::PlanPoint& p = plan_.points[index];
    const std::string out = read_text(tmp_out(p.id)), err = read_text(tmp_err(p.id));
    remove_files(p.id);
    if (g_stop_signal && WIFSIGNALED(status)) return;  // stopped by us: still to do, not failed
    nlohmann::json report;
    bool oom = false;  // `tpusim run` exits 1 with a report for a program that does not fit
    const std::string problem = point_problem(status, out, report, oom);
    const std::string label = point_label(plan_, p);
    const nlohmann::json where = sweep::sweep_point_json(plan_, p);
    if (problem.empty()) {
      write_output_file(sweep::point_file(dir_, p.id),
                        nlohmann::json{{"sweep_point", where}, {"report", report}}.dump(1) + "\n");
      std::remove(sweep::error_file(dir_, p.id).c_str());
      ++(oom ? summary_.oom : summary_.ok);
      const std::string text = result_text(report, oom);
      progress_.finished(label, true, text, seconds, running_.size(), oom);
    } else {
      const std::string tail = error_tail(err);
      const std::string message = problem + (tail.empty() ? "" : ": " + tail);
      write_output_file(sweep::error_file(dir_, p.id),
                        nlohmann::json{{"sweep_point", where},
                                       {"error", message},
                                       {"stderr", err},
                                       {"exit_code", WIFEXITED(status) ? WEXITSTATUS(status) : -1}}
                                .dump(1) +
                            "\n");
      ++summary_.failed;
      progress_.finished(label, false, message, seconds, running_.size());
    }
    on_finish_(index);
  }

  /// The process `pid` ended with `status`.
  void finish(pid_t pid, int status) {
    const Running r = running_.at(pid);
    running_.erase(pid);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
    // Dropped (its files went then, and again now: it might have opened them after), or on
    // trial when the sweep stops: still to do.
    if (r.dropped || (r.trial && g_stop_signal)) return remove_files(r.id);
    if (r.trial) {
      held_ = Held{r.index, r.id, status, seconds};
      return;
    }
    report(r.index, status, seconds);
  }

  /// The feeder's verdict on the point on trial.
  void settle(std::size_t index, bool keep) {
    if (held_ && held_->index == index) {
      if (keep)
        report(index, held_->status, held_->seconds);
      else
        remove_files(held_->id);
      held_.reset();
      return;
    }
    for (auto& [pid, r] : running_)
      if (r.index == index && r.trial) {
        r.trial = false;
        r.dropped = !keep;
        if (!keep) {
          ::kill(pid, SIGKILL);
          remove_files(r.id);  // now: the feeder may take its place in plan.points
        }
        return;
      }
    throw std::logic_error("tpusim bug: a sweep's feeder settles a point that is not on trial");
  }

  /// Points that hold a slot: all running but those dropped (they end in a moment).
  int busy() const {
    int n = 0;
    for (const auto& [pid, r] : running_) n += !r.dropped;
    return n;
  }

  /// Stops the running points (SIGTERM, SIGKILL after 5 s), finishing each as it exits.
  void stop_running() {
    for (const auto& [pid, r] : running_) ::kill(pid, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!running_.empty()) {
      if (const auto ended = server_.wait(20); ended && running_.count(ended->first)) {
        finish(ended->first, ended->second);
        continue;
      }
      if (std::chrono::steady_clock::now() > deadline)
        for (const auto& [p, r] : running_) ::kill(p, SIGKILL);
    }
  }

  const sweep::Plan& plan_;
  const RunnerOptions& options_;
  const std::string& dir_;
  SweepProgress& progress_;
  const std::function<void(std::size_t)>& on_finish_;
  launch::ForkServer& server_;
  RunnerSummary summary_;
  std::map<pid_t, Running> running_;
  std::optional<Held> held_;  ///< the point on trial, ended and not yet settled
};

}  // namespace

RunnerSummary run_points_fed(const sweep::Plan& plan, const std::function<NextPoint()>& next,
                             const RunnerOptions& options, SweepProgress& progress,
                             const std::function<void(std::size_t)>& on_finish) {
  if (options.server == nullptr)
    throw std::logic_error("tpusim bug: a sweep's points run without a fork server");
  return PointRunner(plan, options, progress, on_finish).run(next);
}

}  // namespace tpusim::cli
