#pragma once
// `tpusim trace export TRACE --format chakra --out DIR` as a library call: a trace as Chakra
// execution traces, one .et file per rank.
#include <string>
#include <vector>

namespace tpusim::cli {

struct ExportArgs {
  std::string trace, out, format = "chakra", prefix = "tpusim";
  std::vector<std::string> sets;
  bool standard_only = false;
};

/// Writes the trace as Chakra files into a.out. Throws ConfigError on bad input.
void run_export(const ExportArgs& a);

}  // namespace tpusim::cli
