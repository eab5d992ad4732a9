#pragma once
// The files of a sweep directory and the results table built from them.
//
//   DIR/sweep.json               the plan: columns, series axes, every point's id and values
//   DIR/points/<id>.study.json   the point's resolved study (rerun it with `tpusim run`)
//   DIR/points/<id>.json         {"sweep_point": {...}, "report": <tpusim run --json>} (also for
//                                a point out of memory: its report says "out_of_memory": true)
//   DIR/points/<id>.error.json   {"sweep_point": {...}, "error": "...", "exit_code": N}
//   DIR/results.csv              rebuilt from the point files when a sweep starts and ends; while
//                                it runs, one whole row appended per finished point
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/sweep/csv_table.hpp"

namespace tpusim::sweep {

struct PlanPoint {
  std::size_t index = 0;
  std::string id;
  std::vector<nlohmann::json> values;  ///< aligned with Plan::columns
};

struct Plan {
  std::string sweep_file;
  std::vector<std::string> columns;      ///< swept columns
  std::vector<std::string> series_axes;  ///< columns that tell curves apart
  std::vector<PlanPoint> points;         ///< all points of the sweep, shard or not
  int shard = 1, shard_count = 1;
  std::vector<std::string> sets;  ///< the sweep's --set options, in order (merge compares them)
  std::string command = "run";    ///< what each point runs: run, train or serve

  nlohmann::json to_json() const;
  /// Throws ConfigError(where, ...) if `j` is not a plan.
  static Plan from_json(const nlohmann::json& j, const std::string& where);
  /// Indices of the points this shard runs.
  std::vector<std::size_t> own_indices() const;
  /// Identifies the sweep's points regardless of sharding (merge checks shards agree).
  std::string points_digest() const;
};

/// Oom: the program does not fit the cores' HBM (`tpusim run` exit 1 with its memory report);
/// a result like Ok, not a failure.
enum class PointState { Ok, Oom, Failed, Pending };
const char* to_string(PointState s);  ///< "ok", "oom", "failed", "pending"
/// Ok or Oom: the point has its result and is not run again.
inline bool finished(PointState s) { return s == PointState::Ok || s == PointState::Oom; }
struct PointOutcome {
  PointState state = PointState::Pending;
  nlohmann::json report;  ///< when Ok or Oom
  std::string error;      ///< when Failed
};

std::string point_file(const std::string& dir, const std::string& id);
std::string error_file(const std::string& dir, const std::string& id);
std::string study_file(const std::string& dir, const std::string& id);
/// DIR/points/<id>.program: the point's compiled Program, when `tpusim plan` built it before
/// starting the point (traces/format/program_file.hpp); the runner passes it to the point's `tpusim
/// run --program` and removes it when the point ends.
std::string program_file(const std::string& dir, const std::string& id);
/// Reads DIR/points/<id>.json or .error.json; Pending if neither exists or is unreadable.
PointOutcome read_outcome(const std::string& dir, const std::string& id);

/// The `sweep_point` object stored in point files.
nlohmann::json sweep_point_json(const Plan& plan, const PlanPoint& p);

/// "" if `report` holds every field results.csv needs, else what is missing or mistyped.
std::string check_report(const nlohmann::json& report);

/// The cells of serve_metric_columns() from a `tpusim serve --json` report (not --find-rate);
/// prefix_cache_hit_rate empty without prefix caching. Throws nlohmann::json::exception when
/// the report lacks a metric.
void serve_cells(const nlohmann::json& report, std::map<std::string, std::string>& cell);
/// The same for the report of a point out of memory (no timing, a `memory` object).
std::string check_oom_report(const nlohmann::json& report);

/// One row per point in `indices` (ok, failed or pending), series labels and scaling
/// efficiency: per-chip throughput relative to the point with the fewest chips in its series,
/// (examples_per_s / chips) / (examples_per_s_ref / chips_ref).
CsvTable results_table(const Plan& plan, const std::vector<std::size_t>& indices,
                       const std::function<PointOutcome(const PlanPoint&)>& outcome);

/// A point's per-chip throughput (the scaling efficiency's terms).
struct Throughput {
  double chips, examples_per_s;
};

/// The rows of results.csv one point at a time, in the order points finish: what a running sweep
/// appends. A row's scaling efficiency is relative to the point with the fewest chips of its
/// series among those added so far (results_table, run when the sweep ends, has the final one).
class ResultsRows {
 public:
  explicit ResultsRows(const Plan& plan);
  const std::vector<std::string>& header() const { return header_; }
  std::vector<std::string> add(const PlanPoint& p, const PointOutcome& o);

 private:
  const Plan& plan_;
  std::vector<std::string> header_;
  std::map<std::string, Throughput> reference_;
};

}  // namespace tpusim::sweep
