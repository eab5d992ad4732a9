#pragma once
// `tpusim train STUDY.json` as a library call: time to train. Simulates one device loop (a few
// training steps, a few eval steps, the first training step of the next loop) with the hosts
// feeding every core, then composes the whole run from it (models/train_schedule.hpp).
// docs/train.md.
#include <string>
#include <vector>

namespace tpusim::cli {

struct TrainArgs {
  std::string study;
  std::vector<std::string> sets;
  bool json = false;
  std::string timeline;  ///< --timeline: Chrome trace of the whole run, loops compressed
};

/// Prints the time to train (text, or JSON with a.json). Throws ConfigError on bad input.
void run_train(const TrainArgs& a);

}  // namespace tpusim::cli
