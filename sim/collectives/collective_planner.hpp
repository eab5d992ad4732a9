#pragma once
// Planning and algorithm choice: before the run, every collective op of the Program gets its
// groups (from the mesh axes or explicit replica groups) and, for its algorithm, one plan per
// group (collective_planner.cpp). The algorithm is the configured one, or under `auto` the one
// the cost model predicts fastest for the op's size and groups (algorithm_choice.cpp).
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "models/program.hpp"
#include "sim/collectives/collective_algorithm.hpp"
#include "sim/collectives/cost_model.hpp"
#include "topologies/device_mesh.hpp"

namespace tpusim {

class Machine;

struct CollectiveOpStats {
  std::string algorithm;
  Duration first_start;  ///< earliest group start
  Duration last_end;     ///< latest group end
  Duration longest;      ///< longest single group
  int groups = 0;
  int steps = 0;  ///< steps of one group's plan
  /// Why auto chose another than its fastest predicted algorithm (keep_routes_short), or "".
  std::string note;
};

/// The groups of one axes set (physical cores, mesh order), with each core's group index.
struct GroupSet {
  std::vector<std::vector<int>> groups;
  std::vector<int> group_of_core;  ///< -1: in no group
};

/// Per dimension of the torus, the most hops any route of `plans` takes along it (null plans
/// skipped): what the symmetric domain must cover off the message level (symmetry.cpp), and
/// what keep_routes_short compares (algorithm_choice.cpp).
std::vector<int> hops_along(const Machine& m, const std::vector<const GroupPlan*>& plans);

class CollectivePlanner {
 public:
  CollectivePlanner(const Program& program, const DeviceMesh& mesh, const Machine& machine,
                    const CollectiveOptions& options, const CollectiveCostModel& model);
  ~CollectivePlanner();

  /// Plans every collective of the program for every group, so a group an algorithm cannot
  /// serve is a ConfigError up front, not a failure mid-run; records each op's algorithm and
  /// steps in `stats`.
  void prepare(std::map<int, CollectiveOpStats>& stats);
  const GroupSet& groups(int op_index) const { return *op_groups_[op_index]; }
  /// Per group, the plan its figures are read from: its own, or, for a group that is the first
  /// group moved (chip_shift), the first group's plan, which has the same phases, steps,
  /// predicted time and hops per dimension. Not its members or routes: those are plan().
  const std::vector<const GroupPlan*>& shapes(int op_index) const { return *op_plans_[op_index]; }
  /// Group `group`'s own plan. A moved group's is built from the first group's on first use
  /// (shifted_plan): planning builds one plan per group shape, and a symmetric run moves only
  /// those of the groups it plays.
  const GroupPlan& plan(int op_index, std::size_t group) const;
  /// The shift per dimension of a moved group's plan from the first group's (chip_shift), or
  /// null for a group whose plan was built for it.
  const std::vector<int>* moved_by(int op_index, std::size_t group) const;
  /// The cost model's time of collective `op_index` on its plans (after prepare), uncontended:
  /// what the progress line expects an op in flight to take.
  Duration expected_time(int op_index) const;

  /// What auto gave up for short routes (keep_routes_short), one line per collective; empty if
  /// nothing.
  const std::vector<std::string>& choice_notes() const { return notes_; }

  /// `auto`'s candidates for `spec` in order of preference (ties go to the earlier).
  std::vector<std::string> candidates(const CollectiveSpec& spec, std::size_t group_size) const;

 private:
  const GroupSet& groups_for(const CollectiveSpec& spec);
  /// The plans of `algorithm` for every group of `gs`, built once and profiled together (the
  /// groups of one collective run at the same time and share links); null if the algorithm
  /// cannot serve some group and `optional` (else its ConfigError propagates).
  const std::vector<const GroupPlan*>* cached_plans(const CollectiveSpec& spec, const GroupSet& gs,
                                                    const std::string& algorithm, bool optional);
  /// Throws ConfigError when the all-to-all plans of `gs` would hold more than
  /// kMaxCollectiveTransfers transfers.
  void check_all_to_all_size(const GroupSet& gs, const std::string& name) const;
  const CollectiveAlgorithm& algorithm(const std::string& name);
  /// The bound plan (CollectiveAlgorithm::bound_plan) of `name` for the first group of `gs`,
  /// made once; null if the algorithm cannot serve that group.
  const GroupPlan* cached_bound(const CollectiveSpec& spec, const GroupSet& gs,
                                const std::string& name);
  /// The cost model's time of a plan or of a collective's plans at the op's size, memoised.
  template <class Plans>
  Duration predicted(const Plans& plans, const CollectiveSpec& spec);
  /// Chooses the algorithm of a collective `spec` (one for all its groups) and returns the plans.
  const std::vector<const GroupPlan*>& choose(const CollectiveSpec& spec, const GroupSet& gs,
                                              CollectiveOpStats& st);
  /// Off the message level (options_.auto_resolution > 0), after every op is chosen: a
  /// collective whose routes alone set the symmetric domain's extent along some dimension (no
  /// other collective's routes go as far along it) takes, under auto, the candidate whose
  /// routes reach least past the others', if the predicted time given up over all such
  /// changes stays within auto_resolution of the compute ops' sum (algorithm_choice.cpp).
  /// The same in a symmetric and a full run: it looks at the plans, not at the domain.
  void keep_routes_short(std::map<int, CollectiveOpStats>& stats);
  /// Multislice: the slices whose images a collective's DCN ring joins (1: it stays inside the
  /// slice). An all-reduce over the data axis sums over the replicas of the slices that carry
  /// data (all of them, or slices / dcn_fsdp); with fsdp across slices
  /// (CollectiveOptions::dcn_fsdp) the all-gathers and reduce-scatters over "fsdp" span a group
  /// of dcn_fsdp slices.
  int slices_spanned(const CollectiveSpec& spec) const;
  bool spans_slices(const CollectiveSpec& spec) const;
  /// Its plans: the chosen reduce-scatter and (or) all-gather inside the slice around the ring
  /// across the slices (hierarchical_plan).
  const std::vector<const GroupPlan*>& hierarchical(const CollectiveSpec& spec, const GroupSet& gs,
                                                    CollectiveOpStats& st);

  const Program& program_;
  const DeviceMesh& mesh_;
  const Machine& machine_;
  CollectiveOptions options_;
  const CollectiveCostModel& model_;
  std::map<std::string, std::unique_ptr<GroupSet>> group_sets_;
  std::map<std::string, std::unique_ptr<CollectiveAlgorithm>> algorithms_;
  struct PlanSet {
    std::vector<const GroupPlan*> plans;  ///< per group, its shape (shapes()); empty: cannot serve
    /// Per group: its own plan; null for a moved group's until plan() builds it.
    mutable std::vector<std::unique_ptr<GroupPlan>> owned;
    std::vector<std::vector<int>> by;  ///< per group: its shift (moved_by), empty if built
  };
  /// The plan set whose `plans` an op's shapes are.
  const PlanSet& set_of(int op_index) const;
  std::map<std::string, PlanSet> plans_;          ///< by plan key
  std::map<const void*, const PlanSet*> set_of_;  ///< by the address of a set's `plans`
  std::vector<const PlanSet*> op_sets_;           ///< per op, after prepare: set_of
  std::vector<double> link_scratch_;              ///< for profile_plans
  /// By plan key: made (first) and the bound plan (second; null: cannot serve).
  std::map<std::string, std::pair<bool, std::unique_ptr<GroupPlan>>> bounds_;
  /// auto's predicted times, by (plans or bound plan, bytes, dtype): the ops of a layer repeat
  /// the same collective on the same groups many times.
  std::map<std::tuple<const void*, double, int>, Duration> predicted_;
  /// Per op (prepared once): its group set and each group's plan.
  std::vector<const GroupSet*> op_groups_;
  std::vector<const std::vector<const GroupPlan*>*> op_plans_;
  std::vector<std::string> notes_;  ///< choice_notes
};

}  // namespace tpusim
