#pragma once
// Shared by `tpusim sweep` and `tpusim merge`: writing a sweep directory's plan and results.
#include <string>

#include "tools/sweep/results.hpp"

namespace tpusim::cli {

/// Creates DIR and DIR/points and removes temporary files a killed run left there. Throws
/// ConfigError naming --out if it cannot.
void make_sweep_dir(const std::string& dir);
/// DIR/sweep.json (atomic).
void write_plan(const std::string& dir, const sweep::Plan& plan);
/// Reads DIR/sweep.json. Throws ConfigError if DIR holds no sweep.
sweep::Plan read_plan(const std::string& dir);
/// Rebuilds DIR/results.csv from the point files of the plan's own points; returns the table.
sweep::CsvTable write_results(const std::string& dir, const sweep::Plan& plan);

}  // namespace tpusim::cli
