#pragma once
// A progress line for long single runs, on stderr when it is a terminal: the simulated time, how
// far the slowest core is through the Program, the wall time and an estimate of what is left.
// Rewritten in place (carriage return) at most once per interval; cleared when the run ends.
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/units.hpp"
#include "models/program.hpp"

namespace tpusim {

class Machine;

class RunProgress {
 public:
  /// `interval_s`: wall seconds between lines (the first comes after one interval).
  /// `expected`: per op, the time a collective in flight is expected to take (zero: unknown, and
  /// for compute ops); a collective in flight counts as the part of it that has passed.
  RunProgress(const Machine& machine, const Program& program, std::FILE* out, double interval_s,
              std::vector<Duration> expected = {});
  ~RunProgress();
  /// Called often while the kernel runs (cheap: a clock read); prints when an interval passed.
  void tick();
  int lines() const { return lines_; }

 private:
  const Machine& machine_;
  const Program& program_;
  std::FILE* out_;
  double interval_s_;
  std::vector<Duration> expected_;
  std::chrono::steady_clock::time_point start_, last_;
  int lines_ = 0;
};

}  // namespace tpusim
