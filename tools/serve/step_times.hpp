#pragma once
// The simulated times of a serve's steps: each distinct step shape (prefill or decode, batch,
// tokens, cached tokens) built as the study's Program (workload.program = prefill or decode),
// compiled and played on the simulated machine once (sim/run simulate()), and cached. A step
// between the grid points of its shape is read by linear interpolation between the simulated
// neighbours (docs/serving.md, "Step shapes"):
//   decode:  batch on unit x 2^i (unit: the data replicas x model2, the smallest batch the layout
//            divides; up to max_num_seqs), cached tokens on 0, L/8, 2L/8, ..., L - 1
//            (L = max_model_len);
//   prefill: tokens on 16 x 2^i (up to max_num_batched_tokens or L), a cached prefix on the
//            decode's cached-token grid (chunked prefill).
// Also the KV cache's size per token and the HBM left for it, from the built Programs' memory.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/errors.hpp"
#include "tools/serve/serving_config.hpp"
#include "tools/serve/shape_worker.hpp"
#include "tools/study/study.hpp"

namespace tpusim::serve {

/// What the KV cache may hold on one engine (all its data replicas).
struct KvCapacity {
  bool paged = false;
  std::int64_t page_tokens = 1;     ///< paged: tokens per block
  std::int64_t slots = 0;           ///< sequences at once (max_num_seqs, or fewer if HBM says)
  double pool_tokens = 0;           ///< tokens the cache holds
  double bytes_per_token_core = 0;  ///< per core of a replica, one sequence's token
  double bytes_per_token = 0;       ///< one token's keys and values on the model cores holding it
  double replicas = 1;              ///< replicas of the engine (data x slices x model2)
  double static_bytes_core = 0;     ///< weights and activations at the largest decode step
  double hbm_bytes_core = 0;
};

/// The memory verdict: the weights and activations, or one sequence's KV cache beside them, do
/// not fit in HBM (a ConfigError: exit 2 in `tpusim serve`; a capacity search reports it).
class DoesNotFit : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

class StepTimes {
 public:
  /// Checks that the KV cache holds one sequence of max_model_len beside the weights; throws
  /// DoesNotFit naming serving.max_model_len (or parallelism.model when the weights alone do
  /// not fit).
  StepTimes(const cli::Study& study, const ServingConfig& s);
  ~StepTimes();

  /// A decode step of `batch` sequences whose caches hold `mean_kv` tokens on average.
  double decode_s(std::int64_t batch, double mean_kv);
  /// A prefill step of `tokens` prompt tokens after `prefix` cached tokens.
  double prefill_s(double tokens, double prefix);

  const KvCapacity& capacity() const { return capacity_; }
  const cli::Study& study() const { return study_; }
  int simulated() const { return simulated_; }
  double simulate_seconds() const { return sim_wall_s_; }
  /// Called after each simulated shape (for a progress line).
  std::function<void(int)> on_simulated;

 private:
  /// The grid point (batch or tokens index i, cached-token index k), simulated once.
  double simulate(bool decode, std::size_t i, std::size_t k);
  Config variant(bool decode, std::int64_t batch, std::int64_t tokens, std::int64_t kv,
                 bool paged_one) const;
  void measure_capacity(const ServingConfig& s);

  const cli::Study& study_;
  std::int64_t unit_ = 1;  ///< the smallest batch the layout divides
  int model2_ = 1;
  int model_ = 1;             ///< the model axis: the cores holding one sequence's cache
  std::int64_t max_len_ = 0;  ///< max_model_len
  std::vector<std::int64_t> batches_, kvs_, tokens_;
  // The simulated grid points (NaN: not yet): decode [batch][kv], prefill [tokens][kv].
  std::vector<double> decode_at_, prefill_at_;
  int simulated_ = 0;
  std::unique_ptr<ShapeWorker> worker_;
  KvCapacity capacity_;
  double sim_wall_s_ = 0;
};

}  // namespace tpusim::serve
