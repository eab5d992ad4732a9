#pragma once
// Collective algorithms: each a registered implementation, chosen by name in
// collectives.algorithm ("auto" picks per group; see pick_algorithm).
#include <memory>
#include <string>
#include <vector>

#include "sim/collectives/collective_plan.hpp"
#include "sim/collectives/cost_model.hpp"

namespace tpusim {

class Machine;

/// A group of cores seen as a sub-grid of the physical grid: dimension 0 is the core within the
/// chip, then the topology's dimensions. Empty `extent` if the group is not a sub-grid.
struct GroupShape {
  std::vector<std::vector<int>> values;  ///< per dimension: the coordinates the group spans, sorted
  bool is_grid = false;
  int coord(const Machine& m, int core, int dim) const;
  /// Per dimension: the position of the core's coordinate among `values`.
  std::vector<int> digits(const Machine& m, int core) const;
};
GroupShape analyse_group(const Machine& m, const std::vector<int>& group);

/// The lines of a sub-grid group along dimension `dim`: each line's members by coordinate.
std::vector<std::vector<int>> lines_along(const Machine& m, const GroupShape& shape,
                                          const std::vector<int>& group, int dim);

/// The group ordered by its position in its sub-grid (dimension 0, the core within the chip,
/// fastest); a group that is not a sub-grid keeps its mesh order. With power-of-two extents,
/// flipping bit k of a member's rank moves it along one dimension only.
std::vector<int> grid_order(const Machine& m, const std::vector<int>& group);
/// grid_order with the group's shape already analysed (analyse_group).
std::vector<int> grid_order(const Machine& m, const GroupShape& shape,
                            const std::vector<int>& group);

/// True if the group's members are on more than one chip.
bool spans_chips(const Machine& m, const std::vector<int>& group);

class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;
  /// One line for reports and `tpusim collective --algorithm help`.
  virtual std::string describe() const = 0;
  /// The plan of a reduce-scatter, all-gather or all-reduce over `group` (in mesh order).
  /// Throws ConfigError if this algorithm cannot serve the group.
  virtual GroupPlan plan(const Machine& m, CollectiveKind kind,
                         const std::vector<int>& group) const = 0;
  /// The phases plan() would build for `group`, found without routing anything: no rings, and
  /// each phase's link_s_per_byte and path_latency at most what profile_plans finds for the
  /// routed plan (link_floor). The cost model's step time grows with both, so its predicted
  /// time of this plan bounds the routed plan's from below: `auto` tries the candidates in
  /// the order of these bounds and builds no plan whose bound cannot beat the best so far.
  /// May throw the ConfigError plan() would throw for this group, and only then. The default,
  /// no phases, bounds every plan by the launch alone.
  virtual GroupPlan bound_plan(const Machine& m, CollectiveKind kind,
                               const std::vector<int>& group) const {
    (void)m, (void)kind, (void)group;
    return GroupPlan{};
  }
};

/// An algorithm whose describe() line is fixed when it is made (each variant of a two-variant
/// algorithm gets its own).
class DescribedAlgorithm : public CollectiveAlgorithm {
 public:
  explicit DescribedAlgorithm(const char* line) : line_(line) {}
  std::string describe() const override { return line_; }

 private:
  const char* line_;
};

using AlgorithmFactory = std::unique_ptr<CollectiveAlgorithm> (*)();
/// The factory of one variant of a two-variant algorithm `Algo(bool)`.
template <class Algo, bool Flag>
std::unique_ptr<CollectiveAlgorithm> make_variant() {
  return std::make_unique<Algo>(Flag);
}
struct AlgorithmRegistrar {
  AlgorithmRegistrar(const char* name, AlgorithmFactory make);
};
/// The named algorithm; throws ConfigError listing the names if unknown.
std::unique_ptr<CollectiveAlgorithm> make_algorithm(const std::string& name,
                                                    const std::string& where);
std::vector<std::string> algorithm_names();

/// A plan that is not a ring over the group: a collective-permute by `shift`.
GroupPlan permute_plan(const Machine& m, const std::vector<int>& group, int shift, bool wrap);

/// An all-to-all algorithm (collectives.all_to_all_algorithm; sim/collectives/algorithms/
/// all_to_all_*.cpp), registered by name like the others: its names are that parameter's
/// choices and what `auto` chooses from.
class AllToAllAlgorithm {
 public:
  virtual ~AllToAllAlgorithm() = default;
  /// The plan over `group` (in mesh order). Throws ConfigError if it cannot serve the group.
  virtual GroupPlan plan(const Machine& m, const std::vector<int>& group) const = 0;
  /// The point-to-point transfers plan() would hold for `group`, counted without building it;
  /// 0 for a group it would refuse.
  virtual double transfers(const Machine& m, const std::vector<int>& group) const = 0;
  /// The largest group `auto` tries it for (its plan's size grows with the group).
  virtual std::size_t auto_max_members() const { return static_cast<std::size_t>(-1); }
};
using AllToAllFactory = std::unique_ptr<AllToAllAlgorithm> (*)();
struct AllToAllRegistrar {
  AllToAllRegistrar(const char* name, AllToAllFactory make);
};
/// The named all-to-all algorithm; throws ConfigError naming collectives.all_to_all_algorithm
/// and the registered names if unknown.
std::unique_ptr<AllToAllAlgorithm> make_all_to_all(const std::string& name);
/// The registered all-to-all algorithms' names, sorted.
std::vector<std::string> all_to_all_names();
/// make_all_to_all(algorithm)->plan(m, group); an empty plan for fewer than 2 members.
GroupPlan all_to_all_plan(const Machine& m, const std::vector<int>& group,
                          const std::string& algorithm);
/// make_all_to_all(algorithm)->transfers(m, group); 0 for fewer than 2 members.
double all_to_all_transfers(const Machine& m, const std::vector<int>& group,
                            const std::string& algorithm);

/// What the all-to-all algorithms share: one exchange among `members` in which each sends a
/// piece to every other member at once, each routed in dimension order (so the pieces contend
/// for links); throws ConfigError past kMaxCollectiveTransfers.
Ring all_pairs_exchange(const Machine& m, const std::vector<int>& members);
/// A phase of one exchange step moving `fraction` of the buffer per piece.
PlanPhase exchange_phase(double fraction);

}  // namespace tpusim
