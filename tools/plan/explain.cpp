#include "tools/plan/explain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tpusim::plan {
namespace {

/// Lower is better for every objective: the step time, or the inverse of the rate (examples or
/// tokens per second per chip, MFU), whose candidate field is the objective's name.
double cost_of(const nlohmann::json& c, const std::string& objective) {
  if (objective == "step_time") return c["step_time_ms"].get<double>();
  const double rate = c.value(objective, 0.0);
  return rate > 0 ? 1.0 / rate : HUGE_VAL;
}

std::string value_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  return v.dump();
}

/// A value past `v` to try: twice an integer, else the value itself.
std::string next_value(const nlohmann::json& v) {
  return v.is_number_integer() ? std::to_string(v.get<long long>() * 2) : value_text(v);
}

/// What bounds the winner's step, from its report's shares.
nlohmann::json bound_of(const nlohmann::json& w) {
  const double step = w["step_time_ms"].get<double>();
  const double compute = w.value("compute_ms", 0.0);
  const double exposed = w.value("exposed_comm_share", 0.0);
  const double compute_share = step > 0 ? compute / step : 0.0;
  const std::string by = compute_share >= exposed ? "compute" : "communication";
  nlohmann::json b = {{"by", by},
                      {"compute_share", compute_share},
                      {"exposed_comm_share", exposed},
                      {"mxu_utilization", w.value("mxu_utilization", 0.0)},
                      {"bound_compute_ms", w.value("bound_compute_ms", 0.0)},
                      {"bound_bisection_ms", w.value("bound_bisection_ms", 0.0)}};
  b["text"] = fmt::format(
      "bound by {}: {:.1f} % of the step computing (MXU utilisation {:.1f} %), {:.1f} % waiting "
      "on exposed communication",
      by, 100 * compute_share, 100 * b["mxu_utilization"].get<double>(), 100 * exposed);
  return b;
}

}  // namespace

nlohmann::json explain_winner(const nlohmann::json& candidates, const std::string& winner_id,
                              const std::string& objective, double tie_percent) {
  const nlohmann::json& w = candidates.at(winner_id);
  std::vector<const nlohmann::json*> ranked;
  for (const auto& [id, c] : candidates.items()) ranked.push_back(&c);
  std::sort(ranked.begin(), ranked.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
    return (*a)["rank"].get<int>() < (*b)["rank"].get<int>();
  });
  nlohmann::json e = {{"bound", bound_of(w)},
                      {"tie_percent", tie_percent},
                      {"near_ties", nlohmann::json::array()},
                      {"differs", nlohmann::json::array()}};
  const double wc = cost_of(w, objective);
  const nlohmann::json* next = nullptr;
  for (const auto* c : ranked) {
    if ((*c)["id"] == winner_id) continue;
    if (!next) next = c;
    if (cost_of(*c, objective) <= wc * (1 + tie_percent / 100))
      e["near_ties"].push_back((*c)["id"]);
  }
  if (!next) return e;
  const double nc = cost_of(*next, objective);
  const bool step = objective == "step_time";
  const double delta = step
                           ? (*next)["step_time_ms"].get<double>() - w["step_time_ms"].get<double>()
                           : w.value(objective, 0.0) - next->value(objective, 0.0);
  e["margin"] = {{"runner_up", (*next)["id"]},
                 {"runner_up_layout", (*next)["layout"]},
                 {step ? "step_time_ms" : objective, delta},
                 {"percent", wc > 0 ? 100 * (nc - wc) / wc : 0.0}};
  for (const auto& [axis, v] : w["values"].items())
    if ((*next)["values"].contains(axis) && (*next)["values"][axis] != v)
      e["differs"].push_back(
          {{"axis", axis}, {"winner", v}, {"runner_up", (*next)["values"][axis]}});
  return e;
}

const std::vector<std::string>& memory_saving_keys() {
  static const std::vector<std::string> keys{"parallelism.model",
                                             "parallelism.model2",
                                             "parallelism.fsdp",
                                             "parallelism.sequence",
                                             "parallelism.pipeline",
                                             "parallelism.shard_activations",
                                             "parallelism.weight_update_sharding",
                                             "workload.rematerialize",
                                             "workload.remat",
                                             "workload.microbatches"};
  return keys;
}

std::string what_would_fit(const std::vector<AxisPeaks>& peaks,
                           const std::vector<std::string>& declared_not_searched) {
  std::vector<std::string> widen, add;
  for (const auto& a : peaks) {
    if (a.values.size() < 2 || !a.values.back().is_number()) continue;
    std::size_t best = a.values.size();
    for (std::size_t i = 0; i < a.values.size(); ++i)
      if (a.smallest_peak[i] > 0 &&
          (best == a.values.size() || a.smallest_peak[i] < a.smallest_peak[best]))
        best = i;
    // The peak falls all the way to the axis's largest value: larger ones may fit.
    if (best + 1 == a.values.size() && a.smallest_peak.front() > a.smallest_peak.back())
      widen.push_back(
          fmt::format("{} (the peak falls from {:.2f} GiB at {} to {:.2f} GiB at {}, the "
                      "largest searched: --space {}=...,{})",
                      a.path, a.smallest_peak.front() / (1 << 30), value_text(a.values.front()),
                      a.smallest_peak.back() / (1 << 30), value_text(a.values.back()), a.path,
                      next_value(a.values.back())));
  }
  for (const auto& k : declared_not_searched)
    add.push_back("--space " + k +
                  (k == "workload.rematerialize" || k == "parallelism.shard_activations" ||
                           k == "parallelism.weight_update_sharding"
                       ? "=false,true"
                       : "=1,2,4,8"));
  std::string out;
  if (!widen.empty()) {
    out += "; larger values may fit: ";
    for (std::size_t i = 0; i < widen.size(); ++i) out += (i ? ", " : "") + widen[i];
  }
  if (!add.empty()) {
    out += "; axes not searched that save memory: ";
    for (std::size_t i = 0; i < add.size(); ++i) out += (i ? ", " : "") + add[i];
  }
  if (out.empty()) out = "; no axis of the space lowers the peak enough: a larger slice or chip";
  return out;
}

}  // namespace tpusim::plan
