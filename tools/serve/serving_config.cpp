#include "tools/serve/serving_config.hpp"

#include "core/errors.hpp"
#include "core/serving_params.hpp"
#include "models/builders/decoder_params.hpp"
#include "models/model_builder.hpp"

namespace tpusim::serve {
namespace {

TokenCount token_count(const Config& cfg, const Param<double>& mean, const Param<std::string>& dist,
                       const Param<double>& spread) {
  return {dist(cfg), mean(cfg), spread(cfg)};
}

}  // namespace

ServingConfig read_serving(const Config& cfg) {
  ServingConfig s;
  s.count = kServeCount(cfg);
  s.input = token_count(cfg, kServeInputTokens, kServeInputDist, kServeInputSpread);
  s.output = token_count(cfg, kServeOutputTokens, kServeOutputDist, kServeOutputSpread);
  s.seed = static_cast<std::uint64_t>(kServeSeed(cfg));
  s.arrival = kServeArrival(cfg);
  s.rate_per_s = kServeRate(cfg);
  s.trace = kServeTrace(cfg);
  s.max_num_seqs = kServeMaxSeqs(cfg);
  s.max_num_batched_tokens = kServeMaxBatched(cfg);
  if (kWorkloadModel(cfg) != "decoder_lm")
    throw ConfigError(kWorkloadModel.path(), kWorkloadModel(cfg) +
                                                 ": tpusim serve runs the prefill and decode "
                                                 "steps of a language model; allowed: decoder_lm");
  const std::int64_t seq_len = kDecoderLmSeqLen(cfg);
  s.max_model_len = kServeMaxModelLen(cfg) > 0 ? kServeMaxModelLen(cfg) : seq_len;
  s.scheduler = kServeScheduler(cfg);
  if (s.scheduler == "disaggregated") s.kv_transfer = kServeKvTransfer(cfg);
  s.ttft_limit_ms = kServeTtftLimit(cfg);
  s.tpot_limit_ms = kServeTpotLimit(cfg);
  s.prefix_tokens = kServePrefixTokens(cfg);
  s.prefixes = kServePrefixes(cfg);
  s.prefix_caching = kServePrefixCaching(cfg);
  s.kv_cache_blocks = kServeKvCacheBlocks(cfg);
  ProblemList problems;
  if (s.prefix_caching && kDecoderLmKvCache(cfg) != "paged")
    problems.add(kServePrefixCaching.path(),
                 "true with workload.kv_cache = " + kDecoderLmKvCache(cfg) +
                     ": a prefix's KV blocks are shared by the sequences that hold it, which "
                     "a cache preallocated per sequence cannot do; allowed: false, or "
                     "workload.kv_cache = paged");
  if (s.max_model_len > seq_len)
    problems.add(kServeMaxModelLen.path(),
                 std::to_string(s.max_model_len) +
                     " tokens is longer than the model's "
                     "workload.seq_len = " +
                     std::to_string(seq_len) +
                     "; allowed: at most that, or raise workload.seq_len");
  if (s.arrival == "timestamps" && s.trace.empty())
    problems.add(kServeArrival.path(),
                 "timestamps without serving.requests.trace, which holds "
                 "them; allowed: burst, poisson, or give a trace");
  if (s.count == 0 && s.trace.empty())
    problems.add(kServeCount.path(),
                 "0 without serving.requests.trace: nothing to serve; "
                 "allowed: at least 1");
  problems.throw_if_any();
  return s;
}

}  // namespace tpusim::serve
