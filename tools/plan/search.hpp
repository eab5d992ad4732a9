#pragma once
// Ranking and pruning for `tpusim plan`: the objective, branch and bound over candidates sorted
// by their lower bound, the top K and the time-memory Pareto front. Plain C++.
#include <optional>
#include <string>
#include <vector>

namespace tpusim::plan {

enum class Objective { StepTime, ExamplesPerSPerChip, Mfu, TokensPerSPerChip };
/// "step_time", "examples_per_s_per_chip", "mfu" (model FLOPs utilisation, PaLM's) or
/// "tokens_per_s_per_chip"; throws ConfigError naming --objective otherwise.
Objective parse_objective(const std::string& text);
const char* to_string(Objective o);
/// Objectives whose value is higher for better layouts (all but step_time).
inline bool higher_is_better(Objective o) { return o != Objective::StepTime; }

/// A layout that passed validation and fits in HBM.
struct Evaluated {
  std::size_t candidate = 0;     ///< index into the enumerated candidates
  double bound_ms = 0;           ///< lower bound on the step time
  double peak_bytes = 0;         ///< per core
  double examples_per_step = 0;  ///< global batch
  double chips = 0;
  double tokens_per_step = 0;      ///< language models: global batch x sequence (else 0)
  double model_flops = 0;          ///< the step's model FLOPs over all cores (PaLM's; else 0)
  double peak_flops_per_chip = 0;  ///< bf16 peak of one chip
  std::optional<double> step_ms;   ///< once simulated
};

/// What the objective minimises: the step time in ms, or chip-milliseconds per example, per
/// token, or per model FLOP at peak (the inverse of the rate or of MFU, so that lower is better
/// for all).
double cost(Objective o, const Evaluated& e, double step_ms);
/// The objective's value as reported: step time in ms, examples or tokens per second per chip,
/// or MFU (a fraction).
double objective_value(Objective o, const Evaluated& e, double step_ms);

/// Branch and bound. A candidate is skipped (never simulated) when it can neither enter the top
/// K (at least K simulated layouts cost less than its bound) nor the Pareto front (a simulated
/// layout costs no more than its bound with no more peak memory).
class Pruner {
 public:
  Pruner(Objective objective, std::size_t top_k) : objective_(objective), top_k_(top_k) {}
  void add_simulated(const Evaluated& e);
  /// The index (into the simulated layouts) of one that dominates `e`, if `e` can be skipped.
  std::optional<std::size_t> dominated_by(const Evaluated& e) const;
  /// Whether `e` could be skipped if `running` (layouts still simulating) had already taken
  /// their lower bounds, the least they can: if not, no result of theirs can make it skippable.
  bool could_be_dominated(const Evaluated& e, const std::vector<Evaluated>& running) const;
  const std::vector<Evaluated>& simulated() const { return simulated_; }

 private:
  /// dominated_by over the simulated layouts and `more` (each at its step_ms).
  std::optional<std::size_t> dominated_among(const Evaluated& e,
                                             const std::vector<Evaluated>& more) const;

  Objective objective_;
  std::size_t top_k_;
  std::vector<Evaluated> simulated_;
};

/// Indices of `all` (simulated ones only) in order of cost, best first; at most `k`.
std::vector<std::size_t> top_k(Objective o, const std::vector<Evaluated>& all, std::size_t k);
/// Indices of the simulated layouts on the Pareto front of (cost, peak memory), cheapest first:
/// none of them is beaten on both by another.
std::vector<std::size_t> pareto_front(Objective o, const std::vector<Evaluated>& all);

}  // namespace tpusim::plan
