#pragma once
// The "serving" object of a study, as `tpusim serve` reads it: the requests (counts, lengths,
// arrivals, or a JSONL trace), the engine's limits (max_num_seqs, max_num_batched_tokens,
// max_model_len), the scheduler and the latency limits. Every key is a declared parameter
// (serving.*: `tpusim params serving`).
#include <cstdint>
#include <string>

#include "core/config.hpp"

namespace tpusim::serve {

/// The token count of each request: a fixed value or a distribution around `mean`.
struct TokenCount {
  std::string kind = "fixed";  ///< fixed, uniform, normal, lognormal
  double mean = 0;             ///< tokens (the value, when fixed)
  double spread = 0;  ///< uniform: half the width; normal and lognormal: the standard deviation
};

struct ServingConfig {
  std::int64_t count = 0;
  TokenCount input, output;
  std::uint64_t seed = 1;
  std::string arrival = "poisson";  ///< burst, poisson, timestamps (from the trace)
  double rate_per_s = 0;
  std::string trace;  ///< a JSONL file of requests ("" none)
  std::int64_t max_num_seqs = 0;
  std::int64_t max_num_batched_tokens = 0;
  std::int64_t max_model_len = 0;  ///< 0 read as workload.seq_len
  std::string scheduler = "continuous";
  std::string kv_transfer = "ici";  ///< disaggregated: ici or dcn
  double ttft_limit_ms = 0;         ///< 0: no limit
  double tpot_limit_ms = 0;
  std::int64_t prefix_tokens = 0;    ///< the shared prefix of every drawn prompt (0 none)
  std::int64_t prefixes = 1;         ///< distinct prefixes: request i carries i mod prefixes
  bool prefix_caching = false;       ///< reuse a prefilled prefix's KV blocks (paged cache only)
  std::int64_t kv_cache_blocks = 0;  ///< the KV cache's blocks (0: all the HBM left)
};

/// serving.* of the study; max_model_len resolved. Throws ConfigError naming the path of a
/// value that cannot work (a Poisson rate of zero, a model length past workload.seq_len).
ServingConfig read_serving(const Config& cfg);

}  // namespace tpusim::serve
