#pragma once
// What a running sweep shows on stderr: on a terminal one progress bar line (done, running,
// failed, elapsed, estimate of what remains), redrawn in place; otherwise one plain line per
// finished point, which logs and CI read well.
#include <chrono>
#include <cstdio>
#include <string>

namespace tpusim::cli {

/// Seconds as a clock: "M:SS", or "H:MM:SS" from an hour on.
std::string clock_text(double seconds);

class SweepProgress {
 public:
  /// `total`: points of this run (shard); `already_done`: finished in an earlier run (skipped).
  SweepProgress(std::size_t total, std::size_t already_done, bool terminal,
                std::FILE* out = stderr);

  /// A point finished: `label` names it, `summary` gives the result or the error; `oom`: its
  /// result is that the program does not fit (shown as "oom", not a failure).
  /// `running`: points still running after this one.
  void finished(const std::string& label, bool ok, const std::string& summary, double seconds,
                std::size_t running, bool oom = false);
  /// `n` points of the total will not run (a plan skipped them): the count and the estimate
  /// cover the rest.
  void skipped(std::size_t n);
  /// Redraws the bar (terminal only; at most a few times a second).
  void tick(std::size_t running);
  /// Ends the bar line.
  void close();

  std::size_t failed() const { return failed_; }

 private:
  void draw(std::size_t running);

  std::size_t total_, done_, failed_ = 0, finished_now_ = 0, running_ = 0;
  bool terminal_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace tpusim::cli
