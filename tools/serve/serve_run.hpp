#pragma once
// `tpusim serve STUDY.json` as a library call: the study's "serving" object (serving_config.hpp)
// served on its machine, each step shape simulated once (step_times.hpp), the scheduler composed
// from them (scheduler.hpp); TTFT, TPOT and the rest reported (serve_metrics.hpp).
#include <string>
#include <vector>

namespace tpusim::serve {

struct ServeArgs {
  std::string study;
  std::vector<std::string> sets;
  bool json = false;
  std::string timeline;    ///< Chrome trace of the steps and the occupancy counters
  std::string out;         ///< folder for serve.json, results.csv, requests.csv, occupancy.csv
  bool find_rate = false;  ///< the highest Poisson rate meeting the p99 limits, and Offline
  /// --space PATH=V1,V2,...: with find_rate, the configurations searched (capacity_search.hpp)
  std::vector<std::string> space;
};

/// Runs the serve and prints its report. Returns the exit code (0). Throws ConfigError on bad
/// input (exit 2 in the command).
int run_serve(const ServeArgs& a);

}  // namespace tpusim::serve
