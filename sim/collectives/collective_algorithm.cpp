#include "sim/collectives/collective_algorithm.hpp"

#include <algorithm>
#include <map>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/params.hpp"
#include "core/registry.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {
namespace {
Registry<AlgorithmFactory>& registry() {
  static Registry<AlgorithmFactory> r{"collective algorithm"};
  return r;
}
}  // namespace

AlgorithmRegistrar::AlgorithmRegistrar(const char* name, AlgorithmFactory make) {
  registry().add(name, make);
}

std::vector<std::string> algorithm_names() { return registry().names(); }

std::unique_ptr<CollectiveAlgorithm> make_algorithm(const std::string& name,
                                                    const std::string& where) {
  const AlgorithmFactory* make = registry().find(name);
  if (!make)
    throw ConfigError(where, "unknown collective algorithm '" + name + "'; allowed: auto, " +
                                 registry().names_text());
  return (*make)();
}

int GroupShape::coord(const Machine& m, int core, int dim) const {
  return dim == 0 ? m.core_in_chip(core) : m.topology().coord(m.chip_of(core), dim - 1);
}

GroupShape analyse_group(const Machine& m, const std::vector<int>& group) {
  GroupShape s;
  const int dims = 1 + m.topology().num_dims();
  s.values.resize(dims);
  std::vector<char> seen;
  for (int d = 0; d < dims; ++d) {  // each dimension's coordinates that occur, in order
    seen.assign(
        static_cast<std::size_t>(d == 0 ? m.hardware().devices_per_chip : m.topology().dim(d - 1)),
        0);
    for (int core : group) seen[static_cast<std::size_t>(s.coord(m, core, d))] = 1;
    for (std::size_t c = 0; c < seen.size(); ++c)
      if (seen[c]) s.values[d].push_back(static_cast<int>(c));
  }
  std::size_t product = 1;
  for (const auto& v : s.values) product *= v.size();
  // A sub-grid: as many members as coordinate combinations, and no member twice.
  s.is_grid = product == group.size();
  if (s.is_grid) {
    const int most = *std::max_element(group.begin(), group.end());
    std::vector<char> member(static_cast<std::size_t>(most) + 1, 0);
    for (int core : group) {
      char& seen_core = member[static_cast<std::size_t>(core)];
      if (seen_core) {
        s.is_grid = false;
        break;
      }
      seen_core = 1;
    }
  }
  return s;
}

std::vector<int> GroupShape::digits(const Machine& m, int core) const {
  std::vector<int> out(values.size());
  for (std::size_t d = 0; d < values.size(); ++d) {
    const auto& v = values[d];
    const int c = coord(m, core, static_cast<int>(d));
    out[d] = static_cast<int>(std::lower_bound(v.begin(), v.end(), c) - v.begin());
  }
  return out;
}

std::vector<std::vector<int>> lines_along(const Machine& m, const GroupShape& shape,
                                          const std::vector<int>& group, int dim) {
  // Each member keyed by its other coordinates (the first dimension most significant, so the
  // lines come in the lexicographic order of those coordinates), then its coordinate along dim.
  struct Keyed {
    long long rest;
    int along, core;
    bool operator<(const Keyed& o) const {
      return rest != o.rest ? rest < o.rest : along != o.along ? along < o.along : core < o.core;
    }
  };
  std::vector<Keyed> keyed;
  keyed.reserve(group.size());
  const int dims = static_cast<int>(shape.values.size());
  for (int core : group) {
    long long rest = 0;
    for (int d = 0; d < dims; ++d) {
      if (d == dim) continue;
      const int radix = d == 0 ? m.hardware().devices_per_chip : m.topology().dim(d - 1);
      rest = rest * radix + shape.coord(m, core, d);
    }
    keyed.push_back({rest, shape.coord(m, core, dim), core});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::vector<int>> lines;
  for (std::size_t i = 0; i < keyed.size(); ++i) {
    if (i == 0 || keyed[i].rest != keyed[i - 1].rest) lines.emplace_back();
    lines.back().push_back(keyed[i].core);
  }
  return lines;
}

bool spans_chips(const Machine& m, const std::vector<int>& group) {
  for (int core : group)
    if (m.chip_of(core) != m.chip_of(group.front())) return true;
  return false;
}

std::vector<int> grid_order(const Machine& m, const std::vector<int>& group) {
  return grid_order(m, analyse_group(m, group), group);
}

std::vector<int> grid_order(const Machine& m, const GroupShape& shape,
                            const std::vector<int>& group) {
  if (!shape.is_grid) return group;
  std::vector<int> order(group.size());
  for (int core : group) {
    const std::vector<int> digit = shape.digits(m, core);
    std::size_t rank = 0;
    for (int d = static_cast<int>(digit.size()) - 1; d >= 0; --d)
      rank = rank * shape.values[d].size() + static_cast<std::size_t>(digit[d]);
    order[rank] = core;
  }
  return order;
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

}  // namespace tpusim
