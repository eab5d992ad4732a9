#pragma once
// `tpusim replay TRACE` as a library call: plays a recorded or imported trace on a topology and
// hardware and prints the same report as `tpusim run`. By default the trace's recorded topology
// and hardware.
#include <string>
#include <vector>

namespace tpusim::cli {

struct ReplayArgs {
  std::string trace;
  std::string topology;
  std::string mesh;
  std::string durations = "measured";
  std::vector<std::string> sets;
  bool json = false;
};

/// Replays the trace and prints the run report (text or JSON). Throws ConfigError on bad input.
void run_replay(const ReplayArgs& a);

}  // namespace tpusim::cli
