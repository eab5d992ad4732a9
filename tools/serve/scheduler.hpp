#pragma once
// The serving engine's iterations, composed from the simulated step times (step_times.hpp):
// continuous batching (slots), chunked prefill, JetStream's interleaved prefill and
// disaggregated prefill and decode slices. Each iteration is one step on the simulated machine;
// the engine admits a request only when a slot is free and the KV cache can hold it.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/serve/requests.hpp"
#include "tools/serve/serving_config.hpp"
#include "tools/serve/step_times.hpp"

namespace tpusim::serve {

struct RequestResult {
  double first_token_s = -1;  ///< the prefill step that sampled its first token ended
  double done_s = -1;         ///< its last token
  std::string_view never;     ///< why it can never be served ("" served; a literal)
};

/// The engine after a step: sequences holding a slot and KV tokens reserved.
struct Occupancy {
  double t = 0;
  int engine = 0;  ///< 0 the engine (disaggregated: the decode slice), 1 the prefill slice
  std::int64_t slots = 0;
  double kv_tokens = 0;
};

/// The time-weighted means and the maxima of the engine's occupancy (engine 0), summed step by
/// step (the series itself is kept only for a timeline or an output folder).
struct OccupancyStats {
  double slots_area = 0, kv_area = 0;  ///< slots x seconds, KV tokens x seconds
  double max_slots = 0, max_kv = 0;
  double last_t = 0;
  bool any = false;
  std::int64_t prev_slots = 0;
  double prev_kv = 0;
  /// The engine after a step: the occupancy before it held since the previous sample.
  void add(const Occupancy& o) {
    if (any) {
      slots_area += static_cast<double>(prev_slots) * (o.t - last_t);
      kv_area += prev_kv * (o.t - last_t);
    }
    any = true;
    last_t = o.t;
    prev_slots = o.slots;
    prev_kv = o.kv_tokens;
    max_slots = std::max(max_slots, static_cast<double>(o.slots));
    max_kv = std::max(max_kv, o.kv_tokens);
  }
};

struct StepRecord {
  double start = 0, end = 0;
  int engine = 0;
  const char* kind = "decode";  ///< decode, prefill, mixed, kv_transfer
  std::int64_t batch = 0;       ///< sequences decoding
  std::int64_t tokens = 0;      ///< prompt tokens of the step
};

struct ServeRun {
  std::vector<RequestResult> results;  ///< in the order of the requests
  std::vector<Occupancy> occupancy;    ///< after every step (kept if asked)
  OccupancyStats occupancy_stats;      ///< the engine's (the decode slice's)
  std::vector<StepRecord> steps;       ///< every step (kept if asked)
  std::int64_t iterations = 0;
  // Prefix caching (serving.prefix_caching): admitted requests with a shared prefix, those whose
  // prefix was cached, the prompt tokens they did not prefill, all admitted prompt tokens and
  // the blocks evicted.
  std::int64_t prefix_lookups = 0, prefix_hits = 0;
  double prefix_cached_tokens = 0, prompt_tokens = 0;
  std::int64_t prefix_evicted_blocks = 0;  ///< blocks evicted from the prefix cache
};

/// Runs the scheduler over `requests` (arrival order). `progress` is called now and then with
/// the requests finished. `keep_steps`: fill ServeRun::steps and ServeRun::occupancy (the
/// timeline, the output folder's occupancy.csv).
ServeRun run_scheduler(const std::vector<Request>& requests, const ServingConfig& s,
                       StepTimes& times, bool keep_steps,
                       const std::function<void(std::size_t)>& progress = {});

/// Seconds to move `tokens` tokens of KV cache from the prefill slice to the decode slice
/// (disaggregated): over serving.kv_transfer.
double kv_transfer_s(double tokens, const ServingConfig& s, const StepTimes& times,
                     const cli::Study& study);

}  // namespace tpusim::serve
