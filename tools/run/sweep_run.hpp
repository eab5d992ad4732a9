#pragma once
// `tpusim sweep` as a library call: runs every point of a sweep file in its own process, N at a
// time, resumable, shardable, with optional regression check against a golden CSV.
#include <string>
#include <vector>

namespace tpusim::launch {
class ForkServer;
}

namespace tpusim::cli {

struct SweepArgs {
  std::string sweep_file;
  int jobs = 1;
  std::string out_dir;
  std::string shard = "1/1";
  std::string golden;
  std::string tolerance = "2%";
  bool update_golden = false;
  std::vector<std::string> sets;
  /// Forks the points' processes (tools/launch/fork_server.hpp): the command starts it first,
  /// while it has one thread.
  launch::ForkServer* server = nullptr;
};

/// Runs the sweep into a.out_dir and checks the golden asked for. Returns the exit code: 1 when
/// interrupted, when a point failed or the golden check did not pass, else 0. Throws ConfigError
/// on bad input.
int run_sweep(SweepArgs a);

}  // namespace tpusim::cli
