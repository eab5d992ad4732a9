#pragma once
// `tpusim diff A B` as a library call: two reports (JSON) or two results.csv files side by
// side.
#include <string>
#include <vector>

namespace tpusim::cli {

struct DiffArgs {
  std::string a, b, tolerance;
  bool tolerance_given = false;  ///< --tolerance was on the command line (even as "")
  bool json = false;
};

/// Prints the comparison (text or JSON). Returns the exit code: 1 when a difference exceeds
/// a.tolerance (if given), else 0. Throws ConfigError on bad input.
int run_diff(const DiffArgs& a);

}  // namespace tpusim::cli
