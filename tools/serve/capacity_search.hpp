#pragma once
// `tpusim serve STUDY.json --find-rate --space PATH=V1,V2,...`: the capacity search. Every
// combination of the --space values (batch slots, sharding, quantization, ...) is loaded as the
// study with those values set; one whose weights, or one sequence's KV cache beside them, do not
// fit in HBM is reported with its memory verdict and not run; the others run --find-rate (MLPerf
// Server: the highest Poisson rate meeting the p99 TTFT and TPOT limits; Offline: all requests at
// once). The configurations are ranked by Server rate, then Offline throughput (docs/serving.md,
// "Capacity search").
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/serve/serve_run.hpp"
#include "tools/study/study.hpp"

namespace tpusim::serve {

/// One --space axis: a study key and its values as written (each a --set value: JSON, else a
/// string).
struct CapacityAxis {
  std::string path;
  std::vector<std::string> values;
};

/// Parses the --space options against the study loaded from `a` (every value of an axis is set
/// alone on the study and validated). Throws ConfigError naming --space and the path when an
/// option is not PATH=V1,V2,..., the path is not a key the study declares (topology excluded),
/// a value is listed twice or is refused by the parameter, or the space is too large.
std::vector<CapacityAxis> read_space(const ServeArgs& a);

/// The search's report (what --json prints): the axes, one row per configuration in rank order
/// ("status" ok, does_not_fit or invalid), and the winner (null when no configuration meets the
/// limits at any rate tried).
nlohmann::json capacity_search(const ServeArgs& a, const std::vector<CapacityAxis>& axes);

/// The --find-rate report of one loaded study (defined in serve_run.cpp): what
/// `tpusim serve STUDY --find-rate --json` prints, without the config. Throws DoesNotFit
/// (step_times.hpp) for the memory verdict.
nlohmann::json find_rate_report(const cli::Study& study, const std::string& progress_prefix);

/// The command: the search, its table (or --json) and --out DIR (search.json, results.csv).
int run_capacity_search(const ServeArgs& a);

}  // namespace tpusim::serve
