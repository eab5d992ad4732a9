#pragma once
// The columns of results.csv. The swept values (one column per axis, named by the axis) sit
// between lead_columns() and trail_columns() (a serve sweep: serve_trail_columns()).
#include <string>
#include <vector>

namespace tpusim::sweep {

inline const std::vector<std::string>& lead_columns() {
  static const std::vector<std::string> c{"point", "id", "status"};
  return c;
}

/// Metrics copied from each point's report (`tpusim run --json`), in this order. A report of
/// `tpusim train --json` (a sweep with "command": "train") has step_time_ms and examples_per_s
/// of its steady training step and time_to_train_s; the other metrics stay empty.
inline const std::vector<std::string>& report_metric_columns() {
  static const std::vector<std::string> c{
      "step_time_ms", "compute_ms",      "communication_ms", "exposed_communication_ms",
      "comm_share",   "mxu_utilization", "examples_per_s"};
  return c;
}

/// Metrics a report has only for some runs, copied when it has them (else the cell is empty):
/// model and hardware FLOPs utilisation, tokens per second per chip (sequence models), and the
/// communication time over the data-center network (multislice).
inline const std::vector<std::string>& optional_metric_columns() {
  static const std::vector<std::string> c{"mfu", "hfu", "tokens_per_s_per_chip",
                                          "communication_dcn_ms"};
  return c;
}

/// A sweep of `tpusim serve` ("command": "serve"): the serve report's metrics (docs/serving.md,
/// "Report"), in this order, in place of the step metrics; `tpusim serve --out` writes them too.
inline const std::vector<std::string>& serve_metric_columns() {
  static const std::vector<std::string> c{
      "ttft_ms_mean",       "ttft_ms_p50",         "ttft_ms_p90",    "ttft_ms_p99",
      "tpot_ms_mean",       "tpot_ms_p50",         "tpot_ms_p90",    "tpot_ms_p99",
      "e2e_ms_p50",         "e2e_ms_p99",          "requests_per_s", "goodput_requests_per_s",
      "input_tokens_per_s", "output_tokens_per_s", "never_served",   "prefix_cache_hit_rate",
      "hbm_peak_GiB"};
  return c;
}

/// The columns of a serve sweep after the swept ones.
inline const std::vector<std::string>& serve_trail_columns() {
  static const std::vector<std::string> c = [] {
    std::vector<std::string> v{"series", "model", "layout", "chips", "cores"};
    v.insert(v.end(), serve_metric_columns().begin(), serve_metric_columns().end());
    v.insert(v.end(), {"wall_s", "error"});
    return v;
  }();
  return c;
}

inline const std::vector<std::string>& trail_columns() {
  static const std::vector<std::string> c{"series",
                                          "model",
                                          "layout",
                                          "chips",
                                          "cores",
                                          "step_time_ms",
                                          "compute_ms",
                                          "communication_ms",
                                          "exposed_communication_ms",
                                          "comm_share",
                                          "mxu_utilization",
                                          "examples_per_s",
                                          "examples_per_s_per_chip",
                                          "scaling_efficiency",
                                          "peak_memory_GiB",
                                          "memory_headroom_GiB",
                                          "time_to_train_s",
                                          "mfu",
                                          "hfu",
                                          "tokens_per_s_per_chip",
                                          "communication_dcn_ms",
                                          "wall_s",
                                          "error"};
  return c;
}

inline bool is_fixed_column(const std::string& name) {
  for (const auto* list : {&lead_columns(), &trail_columns(), &serve_metric_columns()})
    for (const auto& c : *list)
      if (c == name) return true;
  return false;
}

}  // namespace tpusim::sweep
