#pragma once
// A sweep file: a base study and axes. Value axes combine as a product; a "zip" group moves its
// axes together; derived axes compute a value per point from an expression. Parsing checks the
// whole file and reports every problem at once (ConfigError, JSON paths).
//
//   {"base": "../bert.json",
//    "axes": [{"zip": [{"path": "topology", "values": ["4x4", "8x8"]},
//                      {"name": "per_core", "values": [8, 16]}]},
//             {"path": "workload.global_batch", "expr": "per_core * cores"}]}
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/sweep/expr.hpp"

namespace tpusim::sweep {

/// An axis with listed values. `path` may be empty (a named variable used by expressions).
struct ValueAxis {
  std::string name;  ///< column name and expression variable; defaults to the path
  std::string path;  ///< config path set to each value, e.g. "hardware.ici.bandwidth_GBps"
  std::vector<nlohmann::json> values;
  std::string where;  ///< JSON path in the sweep file, e.g. "axes[1].zip[0]"
};

/// One factor of the product: a single axis, or several zipped axes of equal length.
struct AxisGroup {
  std::vector<ValueAxis> axes;
  std::size_t size() const { return axes.front().values.size(); }
};

/// An axis whose value is computed per point, after all value axes are set.
struct DerivedAxis {
  std::string name;
  std::string path;  ///< may be empty: then only a variable for later expressions
  Expr expr;
  std::string where;
};

struct SweepSpec {
  std::string file;     ///< the sweep file, for messages ("" for inline documents)
  nlohmann::json base;  ///< the base study as written (presets unresolved)
  std::vector<AxisGroup> groups;
  std::vector<DerivedAxis> derived;
  std::vector<std::string> series;  ///< axis names that split curves (see series_axes())
  bool series_given = false;        ///< "series" was in the file ([] means: by model only)
  /// What each point runs: "run" (one step, the default), "train" (time to train) or "serve"
  /// (tpusim serve: latency percentiles and throughput, docs/serving.md).
  std::string command = "run";

  /// Swept columns in order: value axes (group by group), then derived axes.
  std::vector<std::string> column_names() const;
  /// Axis names whose values tell the curves apart: `series` if the file gives it, else every
  /// value axis with scalar values outside the groups that set the topology.
  std::vector<std::string> series_axes() const;
  std::size_t point_count() const;
};

/// Variables every expression may read besides the axes.
inline const std::vector<std::string>& builtin_variables() {
  static const std::vector<std::string> names{"chips", "cores", "cores_per_chip", "base"};
  return names;
}

/// Checks and parses a sweep document. Relative "base" paths resolve against `dir`.
SweepSpec parse_sweep(const nlohmann::json& doc, const std::string& file, const std::string& dir);
/// Reads and parses a sweep file.
SweepSpec load_sweep_file(const std::string& path);

}  // namespace tpusim::sweep
