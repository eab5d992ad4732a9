#include "core/serving_params.hpp"

#include <vector>

#include "core/params.hpp"

namespace tpusim {
namespace {
using T = ParamType;
const std::vector<std::string> kDistributions = {"fixed", "uniform", "normal", "lognormal"};
}  // namespace

// One parameter per line reads as a table.
// clang-format off
extern const Param<std::int64_t> kServeCount{{"serving.requests.count", T::Integer, "requests", 1000, "requests to serve (with serving.requests.trace: at most this many of its lines; 0 all)", 0, 1e7}};
extern const Param<double> kServeInputTokens{{"serving.requests.input_tokens", T::Number, "tokens", 1024, "prompt tokens of a request: the value (fixed) or the mean of serving.requests.input_distribution", 1, 1e7}};
extern const Param<std::string> kServeInputDist{{"serving.requests.input_distribution", T::String, "", "fixed", "prompt lengths: fixed, uniform (mean +- spread), normal or lognormal (mean and standard deviation spread), drawn with serving.requests.seed, rounded, at least 1", -kInf, kInf, kDistributions}};
extern const Param<double> kServeInputSpread{{"serving.requests.input_spread", T::Number, "tokens", 0, "uniform: half the width of the prompt lengths; normal and lognormal: their standard deviation", 0, 1e7}};
extern const Param<double> kServeOutputTokens{{"serving.requests.output_tokens", T::Number, "tokens", 128, "generated tokens of a request: the value (fixed) or the mean of serving.requests.output_distribution", 1, 1e7}};
extern const Param<std::string> kServeOutputDist{{"serving.requests.output_distribution", T::String, "", "fixed", "generated lengths: fixed, uniform, normal or lognormal (as input_distribution)", -kInf, kInf, kDistributions}};
extern const Param<double> kServeOutputSpread{{"serving.requests.output_spread", T::Number, "tokens", 0, "uniform: half the width of the generated lengths; normal and lognormal: their standard deviation", 0, 1e7}};
extern const Param<std::int64_t> kServeSeed{{"serving.requests.seed", T::Integer, "", 1, "seed of the lengths and Poisson arrivals drawn", 0, 1e18}};
extern const Param<std::string> kServeArrival{{"serving.requests.arrival", T::String, "", "poisson", "burst (every request at time 0: MLPerf Offline, vLLM's rate inf), poisson (MLPerf Server: exponential gaps at serving.requests.rate_per_s) or timestamps (each trace line's arrival_s)", -kInf, kInf, {"burst", "poisson", "timestamps"}}};
extern const Param<double> kServeRate{{"serving.requests.rate_per_s", T::Number, "requests/s", 1, "arrival = poisson: mean requests per second", 1e-9, 1e9}};
extern const Param<std::string> kServeTrace{{"serving.requests.trace", T::String, "", "", "a JSONL file of requests, one object a line with input_tokens, output_tokens and (arrival = timestamps) arrival_s; empty: lengths drawn from the distributions", -kInf, kInf, {}}};
extern const Param<std::int64_t> kServeMaxSeqs{{"serving.max_num_seqs", T::Integer, "sequences", 256, "decode slots: sequences generating at once per replica (vLLM max_num_seqs, JetStream per_device_batch_size x devices)", 1, 1e6}};
extern const Param<std::int64_t> kServeMaxBatched{{"serving.max_num_batched_tokens", T::Integer, "tokens", 2048, "tokens of one step: the prompts a prefill step packs, or (chunked_prefill) the decode tokens and prompt chunks of a mixed step (vLLM max_num_batched_tokens)", 1, 1e8}};
extern const Param<std::int64_t> kServeMaxModelLen{{"serving.max_model_len", T::Integer, "tokens", 0, "longest sequence, prompt and output (vLLM max_model_len, MaxText max_target_length); 0: workload.seq_len. A longer request is counted as never served", 0, 1e7}};
extern const Param<std::string> kServeScheduler{{"serving.scheduler", T::String, "", "continuous", "continuous (slots; waiting prompts prefilled, packed, before the next decode step), chunked_prefill (one mixed step: the decode tokens and prompt chunks within max_num_batched_tokens), interleaved (JetStream: one prompt prefilled between decode steps) or disaggregated (prefill and decode on two slices of the study's shape, the KV cache moved between them)", -kInf, kInf, {"continuous", "chunked_prefill", "interleaved", "disaggregated"}}};
extern const Param<std::string> kServeKvTransfer{{"serving.kv_transfer", T::String, "", "ici", "disaggregated: the KV cache moves from the prefill slice to the decode slice over ici (one ICI link per chip, hardware.ici) or dcn (the hosts' interfaces, dcn.*)", -kInf, kInf, {"ici", "dcn"}, "serving.scheduler", "disaggregated"}};
extern const Param<double> kServeTtftLimit{{"serving.limits.ttft_ms", T::Number, "ms", 2000, "time to first token a request may take to count in the goodput, and --find-rate's p99 limit (MLPerf Llama-2-70B Server: 2000)", 0, 1e9}};
extern const Param<double> kServeTpotLimit{{"serving.limits.tpot_ms", T::Number, "ms", 200, "time per output token a request may take to count in the goodput, and --find-rate's p99 limit (MLPerf Llama-2-70B Server: 200)", 0, 1e9}};
extern const Param<std::int64_t> kServePrefixTokens{{"serving.requests.prefix_tokens", T::Integer, "tokens", 0, "the first tokens of every prompt are a prefix it shares with other requests (a system prompt, few-shot examples; vLLM's benchmark --random-prefix-len), part of input_tokens (a prompt shorter than it is all prefix); a trace line gives its own prefix_tokens and prefix_id", 0, 1e7}};
extern const Param<std::int64_t> kServePrefixes{{"serving.requests.prefixes", T::Integer, "prefixes", 1, "distinct shared prefixes of serving.requests.prefix_tokens: request i carries prefix i mod this", 1, 1e6}};
extern const Param<bool> kServePrefixCaching{{"serving.prefix_caching", T::Boolean, "", false, "automatic prefix caching (vLLM enable_prefix_caching): once a prompt's shared prefix is prefilled its full KV blocks stay in the cache, held once, and a later prompt with the same prefix prefills only the rest; when a sequence needs room, blocks of prefixes no running sequence uses are evicted, least recently used first; needs workload.kv_cache = paged", -kInf, kInf, {}}};
extern const Param<std::int64_t> kServeKvCacheBlocks{{"serving.kv_cache_blocks", T::Integer, "blocks", 0, "the KV cache's size over the engine's replicas, in blocks of workload.kv_page_tokens tokens (a preallocated cache: tokens), instead of all the HBM left beside the weights and activations (vLLM num_gpu_blocks_override); 0: all of it; more than fits is refused", 0, 1e12}};
// clang-format on

}  // namespace tpusim
