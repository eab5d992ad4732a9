#pragma once
// `tpusim merge` as a library call: joins the output directories of sweep shards into one
// directory and results.csv.
#include <string>
#include <vector>

namespace tpusim::cli {

/// Merges the shards' plans and points into `out`. Returns the exit code: 1 unless every point
/// is ok or out of memory, else 0. Throws ConfigError on bad input.
int run_merge(const std::vector<std::string>& dirs, const std::string& out);

}  // namespace tpusim::cli
