#pragma once
// Two runs side by side: the numeric fields of two reports (`tpusim run/replay/collective
// --json`) or the cells of two results tables (results.csv), with absolute and relative
// differences, largest first.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/sweep/csv_table.hpp"

namespace tpusim::sweep {

/// One numeric field present in both runs.
struct NumberDiff {
  std::string
      where;  ///< "step_time_ms", "collectives.all-gather.time_ms", "chips=512 step_time_ms"
  double a = 0, b = 0;
  double absolute() const { return b - a; }
  /// (b - a) / |a|; 0 when both are 0; +-infinity when only a is 0.
  double relative() const;
};

/// A field that is not a number in both, or that only one run has.
struct OtherDiff {
  std::string where;
  std::string a, b;  ///< the values as text; "(absent)" where a run lacks the field
};

struct RunDiff {
  std::vector<NumberDiff>
      numbers;            ///< fields that differ, largest |relative| (then |absolute|) first
  std::size_t equal = 0;  ///< numeric fields with the same value in both
  std::vector<OtherDiff> results;  ///< text results that differ, fields or points only in one run
  std::vector<OtherDiff> inputs;   ///< the embedded study configs' differences (context)

  /// Differences that leave `tolerance` (a fraction): numbers whose |relative| exceeds it, plus
  /// every entry of `results`.
  std::size_t beyond(double tolerance) const;
};

/// Compares two JSON reports (objects with a schema_version). Every numeric leaf outside "config"
/// is compared, except the wall-clock times "wall_s", "memory.analysis_s" and "simulate_wall_s"
/// (the simulator's own time, different on every run); arrays of
/// objects that carry an "op" or "name" are matched by it. Throws ConfigError naming the file if a
/// document is not a report.
RunDiff diff_reports(const nlohmann::json& a, const nlohmann::json& b, const std::string& a_name,
                     const std::string& b_name);

/// Compares two results tables cell by cell. Rows are matched by their swept values when both
/// are results.csv of tpusim sweep with the same axes, else by position; "point", "id" and
/// "wall_s" are not compared.
RunDiff diff_results(const CsvTable& a, const CsvTable& b);

/// A number for people: 6 significant digits.
std::string short_number(double v);

}  // namespace tpusim::sweep
