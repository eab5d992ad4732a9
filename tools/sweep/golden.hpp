#pragma once
// Regression checks of a results table against a golden CSV (an earlier results.csv recorded
// on purpose with --update-golden). Points are matched by their swept values.
#include <map>
#include <string>
#include <vector>

#include "tools/sweep/csv_table.hpp"

namespace tpusim::sweep {

/// One difference that leaves the tolerance (or a point that is missing, extra or failed).
struct Drift {
  std::string point;   ///< the swept values, "topology=4x4 batch=64"
  std::string metric;  ///< "step_time_ms", "comm_share", or "point" for missing/extra/failed
  std::string expected, got, difference;
};

/// Parses "2%" (or a fraction such as "0.02"). Throws ConfigError naming --tolerance.
double parse_tolerance(const std::string& text);

/// Compares step_time_ms relatively (|got - expected| / expected) and comm_share absolutely
/// (a fraction: 2% tolerance means 0.02 of the step). Missing, extra and failed points drift.
std::vector<Drift> compare_to_golden(const CsvTable& golden, const CsvTable& current,
                                     double tolerance);

/// A fixed-width table of drifts, one per line, with a header.
std::string drift_table(const std::vector<Drift>& drifts);

/// The golden form of a results table: the same CSV with comment lines saying what it is.
CsvTable golden_from_results(const CsvTable& results, const std::string& sweep_file,
                             const std::string& version);

/// A point's swept values as text, "topology=4x4 batch=64" (how points are matched).
std::string point_key(const CsvTable& t, std::size_t row, const std::vector<std::string>& cols);
/// Each point's row by its key (point_key). Throws ConfigError naming both rows if a point is
/// in `t` twice: a golden or results table holds each point once, so neither copy may win.
std::map<std::string, std::size_t> rows_by_point(const CsvTable& t,
                                                 const std::vector<std::string>& cols);

/// The swept columns of a results table (between "status" and "series").
std::vector<std::string> swept_columns(const CsvTable& t);

}  // namespace tpusim::sweep
