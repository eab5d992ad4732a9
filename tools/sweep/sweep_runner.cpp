#include "tools/sweep/sweep_runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
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
#include <thread>

#include "core/output_file.hpp"
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
  std::chrono::steady_clock::time_point start;
};

/// Starts `tpusim COMMAND STUDY --json`, with `--program PROGRAM` if that file exists (plan
/// wrote it), stdout and stderr to the given files. vfork, not fork: the child runs in the sweep's
/// memory until it execs, so no page of the sweep (a plan's holds hundreds of MiB, and its other
/// threads keep writing) is copied or write-protected; the child therefore only makes system calls
/// (the paths and arguments are ready before it starts).
pid_t spawn(const std::string& command, const std::string& study, const std::string& program,
            const std::string& out_path, const std::string& err_path) {
  const pid_t parent = ::getpid();
  const bool has_program = ::access(program.c_str(), R_OK) == 0;
  const char* argv[] = {"tpusim",
                        command.c_str(),
                        study.c_str(),
                        "--json",
                        has_program ? "--program" : nullptr,
                        program.c_str(),
                        nullptr};
  const char* out_file = out_path.c_str();
  const char* err_file = err_path.c_str();
  static const char kExecFailed[] = "cannot exec /proc/self/exe\n";
  pid_t pid = ::vfork();
  if (pid != 0) return pid;
  // Child: own process group (the terminal's Ctrl-C goes to the sweep, which stops us), die
  // with the sweep, stdout/stderr to files, then become `tpusim run` (or `tpusim train`, `tpusim
  // serve`).
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &dfl, nullptr);
  int out = ::open(out_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int err = ::open(err_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int in = ::open("/dev/null", O_RDONLY);
  if (out < 0 || err < 0 || in < 0) ::_exit(127);
  ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(err, 2);
  ::execv("/proc/self/exe", const_cast<char* const*>(argv));
  [[maybe_unused]] const ssize_t n = ::write(2, kExecFailed, sizeof kExecFailed - 1);
  ::_exit(127);
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

/// Stops the running points (SIGTERM, SIGKILL after 5 s), `finish` taking each as it exits.
template <class Finish>
void stop_running(const std::map<pid_t, Running>& running, Finish& finish) {
  for (const auto& [pid, r] : running) ::kill(pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!running.empty()) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0 && running.count(pid)) {
      finish(pid, status);
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline)
      for (const auto& [p, r] : running) ::kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
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

RunnerSummary run_points_fed(const sweep::Plan& plan, const std::function<NextPoint()>& next,
                             const RunnerOptions& options, SweepProgress& progress,
                             const std::function<void(std::size_t)>& on_finish) {
  StopSignals signals;
  RunnerSummary summary;
  bool done = false;
  std::map<pid_t, Running> running;
  const std::string& dir = options.out_dir;
  auto tmp_out = [&](const std::string& id) { return dir + "/points/" + id + ".out.tmp"; };
  auto tmp_err = [&](const std::string& id) { return dir + "/points/" + id + ".err.tmp"; };

  auto finish = [&](pid_t pid, int status) {
    Running r = running.at(pid);
    running.erase(pid);
    const sweep::PlanPoint& p = plan.points[r.index];
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
    const std::string out = read_text(tmp_out(p.id)), err = read_text(tmp_err(p.id));
    std::remove(tmp_out(p.id).c_str());
    std::remove(tmp_err(p.id).c_str());
    std::remove(sweep::program_file(dir, p.id).c_str());
    if (g_stop_signal && WIFSIGNALED(status)) return;  // stopped by us: still to do, not failed
    nlohmann::json report;
    bool oom = false;  // `tpusim run` exits 1 with a report for a program that does not fit
    const std::string problem = point_problem(status, out, report, oom);
    const std::string label = point_label(plan, p);
    const nlohmann::json where = sweep::sweep_point_json(plan, p);
    if (problem.empty()) {
      write_output_file(sweep::point_file(dir, p.id),
                        nlohmann::json{{"sweep_point", where}, {"report", report}}.dump(1) + "\n");
      std::remove(sweep::error_file(dir, p.id).c_str());
      ++(oom ? summary.oom : summary.ok);
      const std::string text = result_text(report, oom);
      progress.finished(label, true, text, seconds, running.size(), oom);
    } else {
      const std::string tail = error_tail(err);
      const std::string message = problem + (tail.empty() ? "" : ": " + tail);
      write_output_file(sweep::error_file(dir, p.id),
                        nlohmann::json{{"sweep_point", where},
                                       {"error", message},
                                       {"stderr", err},
                                       {"exit_code", WIFEXITED(status) ? WEXITSTATUS(status) : -1}}
                                .dump(1) +
                            "\n");
      ++summary.failed;
      progress.finished(label, false, message, seconds, running.size());
    }
    on_finish(r.index);
  };

  while (!g_stop_signal) {
    while (!done && static_cast<int>(running.size()) < options.jobs) {
      const NextPoint n = next();
      done = n.done;
      if (!n.index) break;
      const auto& p = plan.points[*n.index];
      pid_t pid = spawn(options.command, sweep::study_file(dir, p.id),
                        sweep::program_file(dir, p.id), tmp_out(p.id), tmp_err(p.id));
      if (pid < 0) throw std::runtime_error(std::string("vfork failed: ") + std::strerror(errno));
      running[pid] = {*n.index, std::chrono::steady_clock::now()};
    }
    if (running.empty()) {
      if (done) break;
      throw std::logic_error("tpusim bug: a sweep's feeder waits for a result with none running");
    }
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0 && running.count(pid)) {
      finish(pid, status);
      continue;
    }
    progress.tick(running.size());
    // A short wait: the next point starts (and a plan decides it) soon after one ends.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  if (g_stop_signal) {
    summary.interrupted = true;
    stop_running(running, finish);
  }
  return summary;
}

}  // namespace tpusim::cli
