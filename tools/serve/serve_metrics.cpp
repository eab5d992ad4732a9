#include "tools/serve/serve_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace tpusim::serve {
namespace {

// Time-weighted mean and maximum of the engine's slots and KV tokens after each step.
nlohmann::json occupancy(const ServeRun& run, const KvCapacity& cap, double start, double end) {
  const OccupancyStats& o = run.occupancy_stats;
  const double slots_area = o.slots_area, kv_area = o.kv_area, max_slots = o.max_slots,
               max_kv = o.max_kv;
  const double span = std::max(end - start, 1e-12);
  return {
      {"slots", {{"capacity", cap.slots}, {"mean", slots_area / span}, {"max", max_slots}}},
      {"kv_cache",
       {{"capacity_tokens", cap.pool_tokens},
        {"mean_tokens", kv_area / span},
        {"max_tokens", max_kv},
        {"mean_fraction", kv_area / span / cap.pool_tokens},
        {"max_fraction", max_kv / cap.pool_tokens}}},
      {"hbm",
       {{"capacity_bytes_per_core", cap.hbm_bytes_core},
        {"static_bytes_per_core", cap.static_bytes_core},
        {"peak_bytes_per_core", cap.static_bytes_core + max_kv / static_cast<double>(cap.replicas) *
                                                            cap.bytes_per_token_core}}}};
}

// The p-th percentile of `v` as percentile() has it, by selection instead of a sort (the same
// two neighbouring ranks, so the same value); reorders `v`.
double select_percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(rank));
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(lo);
  std::nth_element(v.begin(), at, v.end());
  // Every value after the selected one is at least it: the next rank is their minimum.
  const double a = *at, b = lo + 1 < v.size() ? *std::min_element(at + 1, v.end()) : a;
  return a + (b - a) * (rank - static_cast<double>(lo));
}

}  // namespace

double percentile(std::vector<double> values, double p) { return select_percentile(values, p); }

nlohmann::json summary(const std::vector<double>& values) {
  const double mean = values.empty() ? 0
                                     : std::accumulate(values.begin(), values.end(), 0.0) /
                                           static_cast<double>(values.size());
  std::vector<double> v = values;  // reordered by the selections
  const double p50 = select_percentile(v, 50), p90 = select_percentile(v, 90),
               p99 = select_percentile(v, 99);
  return {{"mean", mean},
          {"p50", p50},
          {"p90", p90},
          {"p99", p99},
          {"max", values.empty() ? 0 : *std::max_element(values.begin(), values.end())},
          {"count", values.size()}};
}

nlohmann::json serve_metrics(const std::vector<Request>& requests, const ServeRun& run,
                             const ServingConfig& s, const KvCapacity& cap) {
  std::vector<double> ttft, tpot, e2e;
  std::map<std::string, std::size_t> never;
  double first = -1, last = 0, in_tokens = 0, out_tokens = 0;
  std::size_t good = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    const RequestResult& x = run.results[i];
    if (!x.never.empty()) {
      ++never[std::string(x.never)];
      continue;
    }
    first = first < 0 ? r.arrival_s : std::min(first, r.arrival_s);
    last = std::max(last, x.done_s);
    in_tokens += static_cast<double>(r.input);
    out_tokens += static_cast<double>(r.output);
    const double t1 = (x.first_token_s - r.arrival_s) * 1e3;
    ttft.push_back(t1);
    e2e.push_back((x.done_s - r.arrival_s) * 1e3);
    double t2 = 0;
    if (r.output > 1) {
      t2 = (x.done_s - x.first_token_s) * 1e3 / static_cast<double>(r.output - 1);
      tpot.push_back(t2);
    }
    const bool ok = (s.ttft_limit_ms <= 0 || t1 <= s.ttft_limit_ms) &&
                    (s.tpot_limit_ms <= 0 || t2 <= s.tpot_limit_ms);
    good += ok ? 1 : 0;
  }
  first = std::max(first, 0.0);
  const double duration = std::max(last - first, 1e-12);
  nlohmann::json reasons = nlohmann::json::object();
  std::size_t never_n = 0;
  for (const auto& [why, n] : never) {
    reasons[why] = n;
    never_n += n;
  }
  nlohmann::json j = {
      {"requests",
       {{"count", requests.size()},
        {"served", ttft.size()},
        {"never_served", {{"count", never_n}, {"reasons", reasons}}}}},
      {"ttft_ms", summary(ttft)},
      {"tpot_ms", summary(tpot)},
      {"e2e_ms", summary(e2e)},
      {"duration_s", duration},
      {"requests_per_s", static_cast<double>(ttft.size()) / duration},
      {"input_tokens_per_s", in_tokens / duration},
      {"output_tokens_per_s", out_tokens / duration},
      {"goodput",
       {{"ttft_ms_limit", s.ttft_limit_ms},
        {"tpot_ms_limit", s.tpot_limit_ms},
        {"requests_per_s", static_cast<double>(good) / duration},
        {"fraction", ttft.empty() ? 0.0 : static_cast<double>(good) / ttft.size()}}},
      {"iterations", run.iterations}};
  const nlohmann::json occ = occupancy(run, cap, first, last);
  j["occupancy"] = {{"slots", occ["slots"]}, {"kv_cache", occ["kv_cache"]}};
  j["hbm"] = occ["hbm"];
  // vLLM's prefix cache hit rate is by tokens (cached over queried); by requests beside it.
  j["prefix_cache"] = {
      {"enabled", s.prefix_caching},
      {"lookups", run.prefix_lookups},
      {"hits", run.prefix_hits},
      {"hit_rate", run.prefix_lookups > 0 ? static_cast<double>(run.prefix_hits) /
                                                static_cast<double>(run.prefix_lookups)
                                          : 0.0},
      {"cached_tokens", run.prefix_cached_tokens},
      {"token_hit_rate",
       run.prompt_tokens > 0 ? run.prefix_cached_tokens / run.prompt_tokens : 0.0},
      {"evicted_blocks", run.prefix_evicted_blocks},
      {"evicted_tokens", run.prefix_evicted_blocks * cap.page_tokens}};
  return j;
}

}  // namespace tpusim::serve
