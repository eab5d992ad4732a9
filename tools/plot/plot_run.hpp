#pragma once
// `tpusim plot` as a library call: a sweep's results.csv as charts (SVG and PNG) and the numbers
// behind them.
#include <string>

#include "tools/plot/plot_data.hpp"

namespace tpusim::cli {

/// Writes the charts of the results table `csv` into the directory `out` and prints what it
/// drew. Throws ConfigError on bad input.
void run_plot(const std::string& csv, const std::string& out, PlotRequest request);

}  // namespace tpusim::cli
