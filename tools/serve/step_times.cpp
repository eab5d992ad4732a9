#include "tools/serve/step_times.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include "compiler/compiler.hpp"
#include "core/errors.hpp"
#include "core/serving_params.hpp"
#include "models/builders/decoder_params.hpp"
#include "models/memory/memory_model.hpp"
#include "models/parallelism/layout.hpp"
#include "sim/run/simulation.hpp"

namespace tpusim::serve {
namespace {

constexpr double kStepGiB = 1024.0 * 1024 * 1024;
constexpr std::int64_t kMinPrefillTokens = 16;
constexpr int kKvSteps = 8;  // the cached-token grid: 0, L/8, ..., L - 1

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / kStepGiB);
  return buf;
}

// The grid point below `x` in `grid` (ascending) and the weight of the one above.
std::pair<std::size_t, double> bracket(const std::vector<std::int64_t>& grid, double x) {
  if (x <= static_cast<double>(grid.front())) return {0, 0};
  for (std::size_t i = 0; i + 1 < grid.size(); ++i) {
    const double lo = static_cast<double>(grid[i]), hi = static_cast<double>(grid[i + 1]);
    if (x < hi) return {i, (x - lo) / (hi - lo)};
    if (x == hi && i + 2 == grid.size()) return {i, 1};  // the last point: no point above it
    if (x == hi) return {i + 1, 0};
  }
  // Past the last point: extrapolated along the last interval (a prefill of more tokens).
  const std::size_t i = grid.size() - 2;
  const double lo = static_cast<double>(grid[i]), hi = static_cast<double>(grid[i + 1]);
  return {i, (x - lo) / (hi - lo)};
}

double kv_class_bytes(const Program& p) {
  double b = 0;
  for (const auto& r : p.resident)
    if (r.cls == MemoryClass::KvCache) b += r.bytes;
  return b;
}

}  // namespace

StepTimes::StepTimes(const cli::Study& study, const ServingConfig& s) : study_(study) {
  const Topology topology(study.topology);
  const Layout l =
      read_layout(study.config, topology.num_chips() * study.hardware.devices_per_chip);
  unit_ = static_cast<std::int64_t>(l.data) * l.slices * l.model2;
  model2_ = l.model2;
  model_ = l.model;
  max_len_ = s.max_model_len;
  for (std::int64_t b = unit_;; b *= 2) {
    batches_.push_back(b);
    if (b >= s.max_num_seqs) break;
  }
  if (batches_.size() == 1) batches_.push_back(2 * unit_);  // two points to interpolate
  kvs_.push_back(0);
  for (int i = 1; i <= kKvSteps; ++i)
    kvs_.push_back(std::max<std::int64_t>(kvs_.back() + 1, (max_len_ - 1) * i / kKvSteps));
  // Interleaved prefill pads a prompt to a power of two: up to twice the model length.
  const std::int64_t most = std::max(s.max_num_batched_tokens, 2 * max_len_);
  for (std::int64_t t = kMinPrefillTokens;; t *= 2) {
    tokens_.push_back(t);
    if (t >= most) break;
  }
  if (tokens_.size() == 1) tokens_.push_back(2 * kMinPrefillTokens);
  const double unknown = std::numeric_limits<double>::quiet_NaN();
  decode_at_.assign(batches_.size() * kvs_.size(), unknown);
  prefill_at_.assign(tokens_.size() * kvs_.size(), unknown);
  measure_capacity(s);
  // The worker is forked now, while this process's memory is small (shape_worker.hpp), and
  // after a Program was built here (measure_capacity), so that the library functions building
  // one takes are bound already. Its children see this object as it is here.
  worker_ = std::make_unique<ShapeWorker>([this](const StepShape& shape) {
    const Topology t(study_.topology);
    const Config cfg = variant(shape.decode, shape.batch, shape.tokens, shape.kv, false);
    const Program p = compiled_program(cfg, t, study_.hardware,
                                       shape.decode ? ProgramKind::Decode : ProgramKind::Prefill);
    SimOptions o = SimOptions::from_config(cfg);
    o.progress_interval_s = 0;
    return tpusim::simulate(p, t, study_.hardware, o).step_time.seconds();
  });
}

Config StepTimes::variant(bool decode, std::int64_t batch, std::int64_t tokens, std::int64_t kv,
                          bool paged_one) const {
  nlohmann::json j = study_.config.json();
  j["workload"]["program"] = decode ? "decode" : "prefill";
  j["workload"]["global_batch"] = batch;
  // Decode: the model length the preallocated cache holds; prefill: the prompt's end.
  j["workload"]["seq_len"] = decode ? max_len_ : kv + tokens;
  j["workload"]["kv_length"] = kv;
  if (paged_one) {
    j["workload"]["kv_cache"] = "paged";
    j["workload"]["kv_page_tokens"] = 1;
  }
  return Config(std::move(j));
}

void StepTimes::measure_capacity(const ServingConfig& s) {
  const Topology topology(study_.topology);
  const HardwareSpec& hw = study_.hardware;
  // One token of each sequence at the largest decode batch, paged by the token: the cache's
  // bytes per token, and what else the step keeps (weights, activations).
  const std::int64_t batch = batches_.back();
  const Program p =
      compiled_program(variant(true, batch, 1, 0, true), topology, hw, ProgramKind::Decode);
  const MemoryProfile m = analyze_memory(p, hw.hbm_bytes_per_core);
  const double replicas = static_cast<double>(unit_);
  KvCapacity& c = capacity_;
  c.paged = kDecoderLmKvCache(study_.config) == "paged";
  c.page_tokens = c.paged ? kDecoderLmKvPageTokens(study_.config) : 1;
  // The program's batch is over all replicas; a core holds its replica's share.
  c.bytes_per_token_core = kv_class_bytes(p) / (static_cast<double>(batch) / replicas);
  c.static_bytes_core = m.peak_bytes - m.bytes_by_class[static_cast<int>(MemoryClass::KvCache)];
  c.hbm_bytes_core = hw.hbm_bytes_per_core;
  c.replicas = replicas;
  // A sequence's token is held by the model cores of its replica (model2 splits sequences):
  // what a KV transfer moves, copies of unsplit key/value heads included.
  c.bytes_per_token = c.bytes_per_token_core * model_;
  const double budget = c.hbm_bytes_core - c.static_bytes_core;
  if (budget <= 0)
    throw DoesNotFit("parallelism.model",
                     "the weights and activations of a decode step at " + std::to_string(batch) +
                         " sequences take " + gib(c.static_bytes_core) +
                         " per core, more than "
                         "its " +
                         gib(c.hbm_bytes_core) +
                         " of HBM; allowed: more model "
                         "parallelism (parallelism.model), a smaller serving.max_num_seqs");
  // Each replica's cores hold its share of the cache; the engine's replicas together.
  c.pool_tokens = std::floor(budget / c.bytes_per_token_core) * replicas;
  const double sequence = static_cast<double>(max_len_) * c.bytes_per_token_core;
  if (budget < sequence)
    throw DoesNotFit("serving.max_model_len",
                     std::to_string(max_len_) + " tokens: one sequence's KV cache (" +
                         gib(sequence) + " per core) does not fit in the " + gib(budget) +
                         " of HBM per core beside the weights and activations (" +
                         gib(c.static_bytes_core) +
                         "); allowed: a shorter model length, "
                         "workload.kv_cache_dtype = int8, or more model parallelism");
  if (s.kv_cache_blocks > 0) {
    const double asked = static_cast<double>(s.kv_cache_blocks * c.page_tokens);
    if (asked > c.pool_tokens)
      throw ConfigError(kServeKvCacheBlocks.path(),
                        std::to_string(s.kv_cache_blocks) + " blocks of " +
                            std::to_string(c.page_tokens) + " tokens: more than the " +
                            std::to_string(static_cast<std::int64_t>(c.pool_tokens)) +
                            " tokens the HBM holds beside the weights and activations; allowed: "
                            "at most that, or 0 for all of it");
    if (asked < static_cast<double>(max_len_))
      throw ConfigError(kServeKvCacheBlocks.path(),
                        std::to_string(s.kv_cache_blocks) + " blocks of " +
                            std::to_string(c.page_tokens) +
                            " tokens cannot hold one sequence of serving.max_model_len = " +
                            std::to_string(max_len_) + " tokens; allowed: at least " +
                            std::to_string((max_len_ + c.page_tokens - 1) / c.page_tokens));
    c.pool_tokens = asked;
  }
  c.slots = s.max_num_seqs;
  if (!c.paged)
    c.slots = std::min<std::int64_t>(
        c.slots, static_cast<std::int64_t>(c.pool_tokens / static_cast<double>(max_len_)));
}

StepTimes::~StepTimes() = default;

double StepTimes::simulate(bool decode, std::size_t i, std::size_t k) {
  double& t = (decode ? decode_at_ : prefill_at_)[i * kvs_.size() + k];
  if (!std::isnan(t)) return t;
  const auto start = std::chrono::steady_clock::now();
  StepShape shape;
  shape.decode = decode;
  shape.batch = decode ? batches_[i] : unit_;
  shape.tokens = decode ? 1 : tokens_[i];
  shape.kv = kvs_[k];
  t = worker_->simulate(shape);
  ++simulated_;
  sim_wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (on_simulated) on_simulated(simulated());
  return t;
}

double StepTimes::decode_s(std::int64_t batch, double mean_kv) {
  // Plain copies, not structured bindings: a lambda may not capture those before C++20.
  const auto b_at = bracket(batches_, static_cast<double>(batch));
  const auto k_at = bracket(kvs_, mean_kv);
  const std::size_t bi = b_at.first, ki = k_at.first;
  const double bw = b_at.second, kw = k_at.second;
  auto at = [&](std::size_t b, std::size_t k) { return simulate(true, b, k); };
  auto row = [&](std::size_t b) {
    return (kw < 1 ? at(b, ki) * (1 - kw) : 0) + (kw > 0 ? at(b, ki + 1) * kw : 0);
  };
  return (bw < 1 ? row(bi) * (1 - bw) : 0) + (bw > 0 ? row(bi + 1) * bw : 0);
}

double StepTimes::prefill_s(double tokens, double prefix) {
  // A step of `tokens` over the replicas (one sequence each): tokens per sequence.
  const double per = std::max(1.0, tokens / static_cast<double>(unit_));
  const auto t_at = bracket(tokens_, per);
  const auto p_at = bracket(kvs_, prefix);
  const std::size_t ti = t_at.first, pi = p_at.first;
  const double tw = t_at.second, pw = p_at.second;
  auto at = [&](std::size_t t, std::size_t k) { return simulate(false, t, k); };
  // Past the last token point the weight exceeds 1 (extrapolated along the last interval).
  auto row = [&](std::size_t k) {
    return (tw != 1 ? at(ti, k) * (1 - tw) : 0) + (tw != 0 ? at(ti + 1, k) * tw : 0);
  };
  return (pw < 1 ? row(pi) * (1 - pw) : 0) + (pw > 0 ? row(pi + 1) * pw : 0);
}

}  // namespace tpusim::serve
