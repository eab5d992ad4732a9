#include "tools/plan/search.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace tpusim::plan {

Objective parse_objective(const std::string& text) {
  if (text == "step_time") return Objective::StepTime;
  if (text == "examples_per_s_per_chip") return Objective::ExamplesPerSPerChip;
  throw ConfigError("--objective " + text,
                    "unknown objective; allowed: step_time, examples_per_s_per_chip");
}

const char* to_string(Objective o) {
  return o == Objective::StepTime ? "step_time" : "examples_per_s_per_chip";
}

double cost(Objective o, const Evaluated& e, double step_ms) {
  return o == Objective::StepTime ? step_ms : step_ms * e.chips / e.examples_per_step;
}

double objective_value(Objective o, const Evaluated& e, double step_ms) {
  return o == Objective::StepTime ? step_ms : e.examples_per_step / (step_ms * 1e-3) / e.chips;
}

void Pruner::add_simulated(const Evaluated& e) { simulated_.push_back(e); }

std::optional<std::size_t> Pruner::dominated_by(const Evaluated& e) const {
  const double bound = cost(objective_, e, e.bound_ms);
  std::size_t cheaper = 0;
  std::optional<std::size_t> dominator;
  for (std::size_t i = 0; i < simulated_.size(); ++i) {
    const double c = cost(objective_, simulated_[i], *simulated_[i].step_ms);
    if (c < bound) ++cheaper;
    if (c <= bound && simulated_[i].peak_bytes <= e.peak_bytes &&
        (!dominator ||
         c < cost(objective_, simulated_[*dominator], *simulated_[*dominator].step_ms)))
      dominator = i;
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
