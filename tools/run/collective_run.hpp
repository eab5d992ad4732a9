#pragma once
// `tpusim collective` as a library call: one collective on a topology, with time, bandwidths and
// link use.
#include <string>
#include <vector>

namespace tpusim::cli {

struct CollectiveArgs {
  std::string op;
  std::string bytes;
  std::string topology;
  std::string algorithm;
  std::string mesh;
  std::string axes;
  std::string dtype = "bf16";
  std::string preset = "tpu_v3";
  int shift = 1;
  std::vector<std::string> sets;
  bool json = false;
  std::string links_csv;
};

/// Simulates the collective and prints its time, bandwidths and link use (text or JSON); writes
/// --links-csv. Throws ConfigError on bad input.
void run_collective(const CollectiveArgs& a);

}  // namespace tpusim::cli
