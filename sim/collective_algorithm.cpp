#include "sim/collective_algorithm.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/params.hpp"
#include "sim/machine.hpp"

namespace tpusim {
namespace {
std::map<std::string, AlgorithmFactory>& registry() {
  static std::map<std::string, AlgorithmFactory> r;
  return r;
}
}  // namespace

AlgorithmRegistrar::AlgorithmRegistrar(const char* name, AlgorithmFactory make) {
  registry()[name] = make;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> out;
  for (const auto& [name, _] : registry()) out.push_back(name);
  return out;
}

std::unique_ptr<CollectiveAlgorithm> make_algorithm(const std::string& name,
                                                    const std::string& where) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string names = "auto";
    for (const auto& n : algorithm_names()) names += ", " + n;
    throw ConfigError(where, "unknown collective algorithm '" + name + "'; allowed: " + names);
  }
  return it->second();
}

int GroupShape::coord(const Machine& m, int core, int dim) const {
  return dim == 0 ? m.core_in_chip(core) : m.topology().coord(m.chip_of(core), dim - 1);
}

GroupShape analyse_group(const Machine& m, const std::vector<int>& group) {
  GroupShape s;
  const int dims = 1 + m.topology().num_dims();
  s.values.resize(dims);
  for (int d = 0; d < dims; ++d) {
    std::set<int> vals;
    for (int core : group) vals.insert(s.coord(m, core, d));
    s.values[d].assign(vals.begin(), vals.end());
  }
  std::size_t product = 1;
  for (const auto& v : s.values) product *= v.size();
  // A sub-grid: as many members as coordinate combinations, and no member twice.
  s.is_grid =
      product == group.size() && std::set<int>(group.begin(), group.end()).size() == group.size();
  return s;
}

std::string pick_algorithm(const std::string& configured, const Machine& m,
                           const std::vector<int>& group) {
  if (configured != "auto") return configured;
  return analyse_group(m, group).is_grid ? "per_dimension" : "bidirectional_ring";
}

GroupPlan permute_plan(const Machine& m, const std::vector<int>& group, int shift, bool wrap) {
  const int n = static_cast<int>(group.size());
  PlanPhase p;
  p.kind = StepKind::Exchange;
  p.steps = 1;
  p.step_fraction = 1.0;
  Ring r;
  r.members = group;
  r.next.resize(n);
  for (int i = 0; i < n; ++i) {
    int j = i + shift;
    if (j < 0 || j >= n) {
      if (!wrap) continue;  // the open ends send nothing
      j = ((j % n) + n) % n;
    }
    if (j != i) r.next[i] = m.route(group[i], group[j]);
  }
  r.update_path_latency();
  p.rings.push_back(std::move(r));
  GroupPlan plan;
  plan.phases.push_back(std::move(p));
  return plan;
}

GroupPlan all_to_all_plan(const Machine& m, const std::vector<int>& group) {
  // n-1 rounds; in round k member i sends its piece (1/n of its buffer) to member i+k.
  const int n = static_cast<int>(group.size());
  const std::int64_t transfers = static_cast<std::int64_t>(n) * (n - 1);
  if (transfers > kMaxCollectiveTransfers)
    throw ConfigError("all-to-all", "over " + std::to_string(n) + " cores it is " +
                                        std::to_string(transfers) + " point-to-point transfers, " +
                                        past_limit(static_cast<double>(kMaxCollectiveTransfers),
                                                   "transfers", "kMaxCollectiveTransfers") +
                                        "; use a smaller group (mesh axes)");
  GroupPlan plan;
  for (int k = 1; k < n; ++k) {
    GroupPlan round = permute_plan(m, group, k, true);
    round.phases.front().step_fraction = 1.0 / n;
    plan.phases.push_back(std::move(round.phases.front()));
  }
  return plan;
}

}  // namespace tpusim
