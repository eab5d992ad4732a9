#include "sim/collectives/collective_planner.hpp"

#include <algorithm>
#include <set>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "models/parallelism/layout.hpp"
#include "sim/machine/machine.hpp"
#include "topologies/mesh_placement.hpp"

namespace tpusim {
namespace {
std::string axes_key(const CollectiveSpec& s) {
  if (!s.replica_groups.empty())
    return "groups@" + std::to_string(reinterpret_cast<std::uintptr_t>(&s));
  std::string k;
  for (const auto& a : s.axes) k += a + ",";
  return k;
}
// A pipeline across slices (parallelism.dcn_pipeline): the permute inside the slice, and the
// stage at the slice's open end (the last one for a forward shift, the first for a backward one)
// sends to its image in the next slice over its host's DCN links. The slices run in lockstep, so
// every slice boundary is crossed at once; with repeats (circular), the last slice's last stage
// feeds the first slice's first stage over the DCN as well.
GroupPlan dcn_permute_plan(const Machine& m, const std::vector<int>& members, int shift) {
  GroupPlan plan = permute_plan(m, members, shift, false);
  PlanPhase& phase = plan.phases.front();
  Ring& r = phase.rings.front();
  for (std::size_t i = 0; i < members.size(); ++i)
    if (r.next[i].empty()) r.next[i] = m.dcn_route(members[i]);
  r.update_path_latency();
  phase.dcn = true;
  return plan;
}

}  // namespace

CollectivePlanner::CollectivePlanner(const Program& program, const DeviceMesh& mesh,
                                     const Machine& machine, const CollectiveOptions& options,
                                     const CollectiveCostModel& model)
    : program_(program), mesh_(mesh), machine_(machine), options_(options), model_(model) {
  if (options_.algorithm != "auto") make_algorithm(options_.algorithm, "collectives.algorithm");
  // The layout checks it for a study; `tpusim collective` reaches here with it unchecked.
  check_dcn_fsdp_divides(options_.dcn_fsdp, machine_.slices());
}

CollectivePlanner::~CollectivePlanner() = default;

const GroupSet& CollectivePlanner::groups_for(const CollectiveSpec& spec) {
  const std::string key = axes_key(spec);
  auto& slot = group_sets_[key];
  if (slot) return *slot;
  slot = std::make_unique<GroupSet>();
  // Each mesh device on the core JAX's device mesh gives it (topologies/mesh_placement.hpp).
  const std::vector<int> placed = placed_cores(mesh_, machine_.topology());
  if (spec.replica_groups.empty()) {
    slot->groups = placed_groups(mesh_, placed, spec.axes);
  } else {
    for (const auto& g : spec.replica_groups) {
      std::vector<int> cores;
      for (int d : g) cores.push_back(placed.empty() ? mesh_.physical_core(d) : placed.at(d));
      slot->groups.push_back(std::move(cores));
    }
  }
  slot->group_of_core.assign(machine_.num_cores(), -1);
  for (std::size_t g = 0; g < slot->groups.size(); ++g)
    for (int core : slot->groups[g]) slot->group_of_core[core] = static_cast<int>(g);
  return *slot;
}

const CollectiveAlgorithm& CollectivePlanner::algorithm(const std::string& name) {
  auto& algo = algorithms_[name];
  if (!algo) algo = make_algorithm(name, "collectives.algorithm");
  return *algo;
}

// The plans of all groups together, counted before any is built: each transfer holds its route,
// so a plan past kMaxCollectiveTransfers would take gigabytes (an all-to-all over 131,072 cores).
void CollectivePlanner::check_all_to_all_size(const GroupSet& gs, const std::string& name) const {
  double transfers = 0;
  for (const auto& members : gs.groups) transfers += all_to_all_transfers(machine_, members, name);
  if (transfers <= static_cast<double>(kMaxCollectiveTransfers)) return;
  throw ConfigError("all-to-all",
                    "the " + name + " plan over " + std::to_string(gs.groups.size()) +
                        (gs.groups.size() == 1 ? " group of " : " groups of ") +
                        std::to_string(gs.groups.front().size()) + " cores holds " +
                        format_number(transfers) + " point-to-point transfers, " +
                        past_limit(static_cast<double>(kMaxCollectiveTransfers), "transfers",
                                   "kMaxCollectiveTransfers") +
                        "; use smaller groups (fewer chips or an all-to-all over one mesh axis)");
}

const std::vector<const GroupPlan*>* CollectivePlanner::cached_plans(const CollectiveSpec& spec,
                                                                     const GroupSet& gs,
                                                                     const std::string& name,
                                                                     bool optional) {
  const std::string key = axes_key(spec) + "|" + to_string(spec.kind) + "|" + name + "|" +
                          std::to_string(spec.shift) + (spec.wrap ? "w" : "");
  auto found = plans_.find(key);
  // A failure seen before is rebuilt when it must be reported, to throw its own error.
  if (found != plans_.end() && (!found->second.plans.empty() || optional))
    return found->second.plans.empty() ? nullptr : &found->second.plans;
  PlanSet& set = plans_[key];
  try {
    if (spec.kind == CollectiveKind::AllToAll) check_all_to_all_size(gs, name);
    std::vector<int> by;
    set.by.assign(gs.groups.size(), {});
    for (const auto& members : gs.groups) {
      const bool dcn_permute =
          spec.kind == CollectiveKind::CollectivePermute && options_.pipeline_across_slices;
      // A group that is the first one moved takes its plan moved (chip_shift), built only when
      // asked for (plan()); not one that sends over the DCN (its DCN routes are built per group,
      // as hierarchical_plan does).
      if (!dcn_permute && !set.owned.empty() &&
          chip_shift(machine_, gs.groups.front(), members, by)) {
        set.by[set.owned.size()] = by;
        set.owned.emplace_back();
        continue;
      }
      auto plan = std::make_unique<GroupPlan>();
      if (dcn_permute)
        *plan = dcn_permute_plan(machine_, members, spec.shift);
      else if (spec.kind == CollectiveKind::CollectivePermute)
        *plan = permute_plan(machine_, members, spec.shift, spec.wrap);
      else if (spec.kind == CollectiveKind::AllToAll)
        *plan = all_to_all_plan(machine_, members, name);
      else
        *plan = algorithm(name).plan(machine_, spec.kind, members);
      set.owned.push_back(std::move(plan));
    }
  } catch (const ConfigError&) {
    set.owned.clear();
    set.by.clear();
    if (!optional) throw;
    return nullptr;
  }
  std::vector<GroupPlan*> all;
  for (auto& p : set.owned) {
    all.push_back(p ? p.get() : set.owned.front().get());
    set.plans.push_back(all.back());
  }
  profile_plans(machine_, all, link_scratch_, &set.by);
  set_of_[&set.plans] = &set;
  return &set.plans;
}

const CollectivePlanner::PlanSet& CollectivePlanner::set_of(int op_index) const {
  return *op_sets_[static_cast<std::size_t>(op_index)];
}

const GroupPlan& CollectivePlanner::plan(int op_index, std::size_t group) const {
  const PlanSet& set = set_of(op_index);
  auto& own = set.owned[group];
  if (!own) own = std::make_unique<GroupPlan>(shifted_plan(machine_, *set.plans[0], set.by[group]));
  return *own;
}

const std::vector<int>* CollectivePlanner::moved_by(int op_index, std::size_t group) const {
  const PlanSet& set = set_of(op_index);
  return set.by[group].empty() ? nullptr : &set.by[group];
}

const GroupPlan* CollectivePlanner::cached_bound(const CollectiveSpec& spec, const GroupSet& gs,
                                                 const std::string& name) {
  auto& slot = bounds_[axes_key(spec) + "|" + to_string(spec.kind) + "|" + name];
  if (!slot.first) {
    slot.first = true;
    try {
      slot.second = std::make_unique<GroupPlan>(
          algorithm(name).bound_plan(machine_, spec.kind, gs.groups.front()));
    } catch (const ConfigError&) {
      slot.second.reset();
    }
  }
  return slot.second.get();
}

int CollectivePlanner::slices_spanned(const CollectiveSpec& spec) const {
  if (machine_.slices() <= 1 || !spec.replica_groups.empty()) return 1;
  // The slices carry the pipeline (parallelism.dcn_pipeline): only its permutes cross them.
  if (options_.pipeline_across_slices) return 1;
  auto has = [&](const char* axis) {
    return std::find(spec.axes.begin(), spec.axes.end(), axis) != spec.axes.end();
  };
  // MaxText's hybrid mesh: dcn_data x dcn_fsdp slices (parallelism.dcn_fsdp of them carry fsdp,
  // the rest data). The weights' all-gathers and the gradients' reduce-scatters over "fsdp"
  // span a group of dcn_fsdp slices; an all-reduce spans the slices of each DCN axis it names
  // (over "data", the dcn_data slices that hold the same fsdp shard).
  const int fsdp = options_.dcn_fsdp, data = machine_.slices() / fsdp;
  if (spec.kind == CollectiveKind::AllGather || spec.kind == CollectiveKind::ReduceScatter)
    return has("fsdp") ? fsdp : 1;
  if (spec.kind != CollectiveKind::AllReduce) return 1;
  return (has("data") ? data : 1) * (has("fsdp") ? fsdp : 1);
}

bool CollectivePlanner::spans_slices(const CollectiveSpec& spec) const {
  return slices_spanned(spec) > 1;
}

const std::vector<const GroupPlan*>& CollectivePlanner::hierarchical(const CollectiveSpec& spec,
                                                                     const GroupSet& gs,
                                                                     CollectiveOpStats& st) {
  CollectiveSpec part = spec;
  const int ring = slices_spanned(spec);
  const bool reduce = spec.kind != CollectiveKind::AllGather;
  const bool gather = spec.kind != CollectiveKind::ReduceScatter;
  // The ICI halves the collective needs: a reduce-scatter before the DCN ring (all-reduce,
  // reduce-scatter), an all-gather after it (all-reduce, all-gather).
  CollectiveOpStats rs_stats, ag_stats;
  part.kind = CollectiveKind::ReduceScatter;
  const auto* rs = reduce ? &choose(part, gs, rs_stats) : nullptr;
  part.kind = CollectiveKind::AllGather;
  const auto* ag = gather ? &choose(part, gs, ag_stats) : nullptr;
  st.algorithm = (reduce ? rs_stats.algorithm + " + " : std::string()) + "dcn_ring" +
                 (gather ? " + " + ag_stats.algorithm : std::string());
  PlanSet& set = plans_[std::string("hierarchical|") + to_string(spec.kind) + "|" + axes_key(spec) +
                        "|" + std::to_string(ring) + "|" + st.algorithm];
  if (set.plans.empty()) {
    std::vector<GroupPlan*> all;
    // The ICI halves' own plans (the moved groups' built now: their routes are copied in).
    const auto own = [this](const std::vector<const GroupPlan*>* plans, std::size_t g) {
      const PlanSet* part = plans ? set_of_.at(plans) : nullptr;
      if (!part) return static_cast<const GroupPlan*>(nullptr);
      auto& p = part->owned[g];
      if (!p) p = std::make_unique<GroupPlan>(shifted_plan(machine_, *part->plans[0], part->by[g]));
      return static_cast<const GroupPlan*>(p.get());
    };
    for (std::size_t g = 0; g < gs.groups.size(); ++g) {
      set.owned.push_back(std::make_unique<GroupPlan>(
          hierarchical_plan(machine_, own(rs, g), own(ag, g), gs.groups[g], ring)));
      all.push_back(set.owned.back().get());
      set.plans.push_back(all.back());
    }
    set.by.assign(set.owned.size(), {});
    profile_plans(machine_, all, link_scratch_);
    set_of_[&set.plans] = &set;
  }
  st.steps = 0;
  for (const auto& p : set.plans.front()->phases) st.steps += p.steps;
  return set.plans;
}

void CollectivePlanner::prepare(std::map<int, CollectiveOpStats>& stats) {
  op_groups_.assign(program_.ops.size(), nullptr);
  op_plans_.assign(program_.ops.size(), {});
  // The ops of a layer repeat the same collective on the same groups many times: choose() once
  // per (groups, kind, shift, wrap, size, dtype), which is all it reads of an op.
  using ChoiceKey = std::tuple<const GroupSet*, int, int, bool, double, int>;
  std::map<ChoiceKey, std::size_t> chosen;  // -> the first op of that choice
  for (std::size_t i = 0; i < program_.ops.size(); ++i) {
    if (!program_.ops[i].is_collective) continue;
    const GroupSet& gs = groups_for(program_.ops[i].collective);
    op_groups_[i] = &gs;
    const CollectiveSpec& spec = program_.ops[i].collective;
    auto& st = stats[static_cast<int>(i)];
    if (spans_slices(spec)) {
      op_plans_[i] = &hierarchical(spec, gs, st);
      continue;
    }
    const ChoiceKey key{&gs,        static_cast<int>(spec.kind), spec.shift, spec.wrap,
                        spec.bytes, static_cast<int>(spec.dtype)};
    const auto [at, added] = chosen.emplace(key, i);
    if (added) {
      op_plans_[i] = &choose(spec, gs, st);
      continue;
    }
    const CollectiveOpStats& same = stats[static_cast<int>(at->second)];
    st.algorithm = same.algorithm;
    st.steps = same.steps;
    op_plans_[i] = op_plans_[at->second];
  }
  keep_routes_short(stats);
  // The plans `auto` built and did not choose are not needed any more.
  std::set<const std::vector<const GroupPlan*>*> used(op_plans_.begin(), op_plans_.end());
  for (auto it = plans_.begin(); it != plans_.end();) {
    if (used.count(&it->second.plans)) {
      ++it;
      continue;
    }
    set_of_.erase(&it->second.plans);
    it = plans_.erase(it);
  }
  op_sets_.assign(op_plans_.size(), nullptr);
  for (std::size_t i = 0; i < op_plans_.size(); ++i)
    if (op_plans_[i]) op_sets_[i] = set_of_.at(op_plans_[i]);
}

}  // namespace tpusim
