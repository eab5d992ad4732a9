#pragma once
// `tpusim plan STUDY.json` as a library call: searches the layouts of a study's model, slice and
// batch; prunes the invalid, those that do not fit in HBM and those a lower bound shows cannot
// win; simulates the rest through the sweep runner (one process each, resumable); reports the top
// K, the Pareto front and the winner as a study. docs/plan.md.
#include <string>
#include <vector>

#include "tools/plan/explain.hpp"

namespace tpusim::launch {
class ForkServer;
}

namespace tpusim::cli {

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
  /// Layouts within this many percent of the winner's objective are flagged as near ties
  /// (--tie; tools/plan/explain.hpp, kDefaultTiePercent).
  double tie_percent = plan::kDefaultTiePercent;
  /// Forks the simulations' processes (tools/launch/fork_server.hpp): the command starts it
  /// first, while it has one thread.
  launch::ForkServer* server = nullptr;
};

/// Runs the plan into a.out_dir (default plan_<name of the study>) and prints it; returns the
/// exit code (1: interrupted, or no layout could be simulated). Throws ConfigError on bad input.
int run_plan(PlanArgs a);

}  // namespace tpusim::cli
