#pragma once
// The requests of a serve: drawn from the serving.requests distributions with their seed, or read
// from a JSONL trace; arrivals at once (burst), Poisson or the trace's timestamps.
#include <cstdint>
#include <vector>

#include "tools/serve/serving_config.hpp"

namespace tpusim::serve {

struct Request {
  double arrival_s = 0;
  std::int64_t input = 0;       ///< prompt tokens
  std::int64_t output = 0;      ///< tokens to generate (the first comes from the prefill)
  std::int64_t prefix = 0;      ///< the first prompt tokens it shares with other requests
  std::int64_t prefix_id = -1;  ///< which shared prefix (-1 none)
};

/// The requests in arrival order. Throws ConfigError naming serving.requests.trace (with the
/// line) for a trace that cannot be read.
std::vector<Request> make_requests(const ServingConfig& s);

/// `requests` with new Poisson arrivals at `rate_per_s` (the lengths kept), seeded by `seed`;
/// rate 0: all at time 0 (burst).
std::vector<Request> with_poisson_arrivals(std::vector<Request> requests, double rate_per_s,
                                           std::uint64_t seed);

}  // namespace tpusim::serve
