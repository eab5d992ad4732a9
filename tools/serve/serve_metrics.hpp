#pragma once
// What a serve tells: latency percentiles (TTFT, TPOT, end to end: MLPerf Inference's
// definitions), throughput, goodput under the limits, slot and KV-cache occupancy, HBM.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "tools/serve/requests.hpp"
#include "tools/serve/scheduler.hpp"

namespace tpusim::serve {

/// The p-th percentile (0..100) of `values`, linear between the closest ranks (NumPy's default):
/// rank p/100 x (n - 1) of the sorted values. 0 for no values.
double percentile(std::vector<double> values, double p);

/// {"mean", "p50", "p90", "p99", "max", "count"} of `values`.
nlohmann::json summary(const std::vector<double>& values);

/// The metrics of a run: ttft_ms, tpot_ms, e2e_ms, requests_per_s, input_tokens_per_s,
/// output_tokens_per_s, duration_s, goodput, requests (served, never served with the reasons),
/// occupancy (slots and KV cache, time-weighted mean and max), hbm, prefix_cache (lookups,
/// hits, hit_rate, cached_tokens, token_hit_rate). TPOT of a request:
/// (last token - first token) / (output tokens - 1), for requests of 2 tokens or more.
nlohmann::json serve_metrics(const std::vector<Request>& requests, const ServeRun& run,
                             const ServingConfig& s, const KvCapacity& cap);

}  // namespace tpusim::serve
