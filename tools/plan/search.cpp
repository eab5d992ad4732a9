#include "tools/plan/search.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"

namespace tpusim::plan {

namespace {

/// What one step delivers, in the objective's unit (examples, tokens, or seconds of the chips'
/// peak that its model FLOPs fill); the objective is that per chip-second.
double work_per_step(Objective o, const Evaluated& e) {
  switch (o) {
    case Objective::TokensPerSPerChip:
      return e.tokens_per_step;
    case Objective::Mfu:
      return e.peak_flops_per_chip > 0 ? e.model_flops / e.peak_flops_per_chip : 0.0;
    default:
      return e.examples_per_step;
  }
}

}  // namespace

Objective parse_objective(const std::string& text) {
  for (Objective o : {Objective::StepTime, Objective::ExamplesPerSPerChip, Objective::Mfu,
                      Objective::TokensPerSPerChip})
    if (text == to_string(o)) return o;
  throw ConfigError("--objective " + text,
                    "unknown objective; allowed: step_time, examples_per_s_per_chip, mfu, "
                    "tokens_per_s_per_chip");
}

const char* to_string(Objective o) {
  switch (o) {
    case Objective::StepTime:
      return "step_time";
    case Objective::Mfu:
      return "mfu";
    case Objective::TokensPerSPerChip:
      return "tokens_per_s_per_chip";
    default:
      return "examples_per_s_per_chip";
  }
}

double cost(Objective o, const Evaluated& e, double step_ms) {
  if (o == Objective::StepTime) return step_ms;
  const double work = work_per_step(o, e);
  return work > 0 ? step_ms * e.chips / work : HUGE_VAL;
}

double objective_value(Objective o, const Evaluated& e, double step_ms) {
  if (o == Objective::StepTime) return step_ms;
  return work_per_step(o, e) / (step_ms * 1e-3) / e.chips;
}

void Pruner::add_simulated(const Evaluated& e) { simulated_.push_back(e); }

std::optional<std::size_t> Pruner::dominated_by(const Evaluated& e) const {
  return dominated_among(e, {});
}

bool Pruner::could_be_dominated(const Evaluated& e, const std::vector<Evaluated>& running) const {
  std::vector<Evaluated> at_bounds = running;
  for (Evaluated& r : at_bounds) r.step_ms = r.bound_ms;
  return dominated_among(e, at_bounds).has_value();
}

std::optional<std::size_t> Pruner::dominated_among(const Evaluated& e,
                                                   const std::vector<Evaluated>& more) const {
  const double bound = cost(objective_, e, e.bound_ms);
  std::size_t cheaper = 0;
  std::optional<std::size_t> dominator;
  double dominator_cost = 0;
  for (std::size_t i = 0; i < simulated_.size() + more.size(); ++i) {
    const Evaluated& s = i < simulated_.size() ? simulated_[i] : more[i - simulated_.size()];
    const double c = cost(objective_, s, *s.step_ms);
    if (c < bound) ++cheaper;
    if (c <= bound && s.peak_bytes <= e.peak_bytes && (!dominator || c < dominator_cost)) {
      dominator = i;
      dominator_cost = c;
    }
  }
  if (cheaper >= top_k_ && dominator) return dominator;
  return std::nullopt;
}

std::vector<std::size_t> top_k(Objective o, const std::vector<Evaluated>& all, std::size_t k) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i].step_ms) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return cost(o, all[a], *all[a].step_ms) < cost(o, all[b], *all[b].step_ms);
  });
  if (idx.size() > k) idx.resize(k);
  return idx;
}

std::vector<std::size_t> pareto_front(Objective o, const std::vector<Evaluated>& all) {
  std::vector<std::size_t> front;
  for (std::size_t i : top_k(o, all, all.size())) {  // cheapest first
    // Kept if it needs less memory than every cheaper layout kept so far; of two that cost
    // the same, the one with less memory.
    if (!front.empty() && all[i].peak_bytes >= all[front.back()].peak_bytes) continue;
    const std::size_t last = front.empty() ? i : front.back();
    if (!front.empty() &&
        cost(o, all[i], *all[i].step_ms) == cost(o, all[last], *all[last].step_ms))
      front.back() = i;
    else
      front.push_back(i);
  }
  return front;
}

}  // namespace tpusim::plan
