#pragma once
// The timing loop and result row shared by the benchmarks of tpusim_host_ops_bench
// (host_ops.cpp: the input-pipeline operations; host_metric_ops.cpp: the evaluation metrics').
#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace host_ops_bench {

inline volatile double g_sink = 0;  // keeps results alive

/// The ns per unit of `body` (which processes `units` units per call) over `rounds` rounds of
/// `reps` calls: the fastest round and the median one.
struct Timing {
  double min_ns, median_ns;
};
inline Timing time_per_unit(int rounds, int reps, double units, const std::function<void()>& body) {
  std::vector<double> per_unit;
  body();  // warm-up
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) body();
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    per_unit.push_back(ns / reps / units);
  }
  std::sort(per_unit.begin(), per_unit.end());
  return {per_unit.front(), per_unit[per_unit.size() / 2]};
}

/// One printed row: the parameter (after "hardware.host.cost."), its unit, the timing.
struct Result {
  const char* param;
  const char* unit;
  Timing ns;
};

/// The evaluation metrics' operations (host_metric_ops.cpp).
void bench_metric_ops(int rounds, std::vector<Result>& out);

}  // namespace host_ops_bench
