#pragma once
// Collective algorithms: each a registered implementation, chosen by name in
// collectives.algorithm ("auto" picks per group; see pick_algorithm).
#include <memory>
#include <string>
#include <vector>

#include "sim/collective_plan.hpp"

namespace tpusim {

class Machine;

/// A group of cores seen as a sub-grid of the physical grid: dimension 0 is the core within the
/// chip, then the topology's dimensions. Empty `extent` if the group is not a sub-grid.
struct GroupShape {
  std::vector<std::vector<int>> values;  ///< per dimension: the coordinates the group spans, sorted
  bool is_grid = false;
  int coord(const Machine& m, int core, int dim) const;
};
GroupShape analyse_group(const Machine& m, const std::vector<int>& group);

class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;
  /// One line for reports and `tpusim collective --algorithm help`.
  virtual std::string describe() const = 0;
  /// The plan of a reduce-scatter, all-gather or all-reduce over `group` (in mesh order).
  /// Throws ConfigError if this algorithm cannot serve the group.
  virtual GroupPlan plan(const Machine& m, CollectiveKind kind,
                         const std::vector<int>& group) const = 0;
};

using AlgorithmFactory = std::unique_ptr<CollectiveAlgorithm> (*)();
struct AlgorithmRegistrar {
  AlgorithmRegistrar(const char* name, AlgorithmFactory make);
};
/// The named algorithm; throws ConfigError listing the names if unknown.
std::unique_ptr<CollectiveAlgorithm> make_algorithm(const std::string& name,
                                                    const std::string& where);
std::vector<std::string> algorithm_names();

/// "auto": per_dimension, which covers a group inside one chip (the on-chip step alone), a
/// sub-grid (rings per dimension), and falls back to a bidirectional ring otherwise.
std::string pick_algorithm(const std::string& configured, const Machine& m,
                           const std::vector<int>& group);

/// Plans that are not rings over the group: a collective-permute by `shift` and an all-to-all.
GroupPlan permute_plan(const Machine& m, const std::vector<int>& group, int shift, bool wrap);
GroupPlan all_to_all_plan(const Machine& m, const std::vector<int>& group);

}  // namespace tpusim
