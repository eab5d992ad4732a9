// The hierarchical collectives of multislice: ICI reduce-scatter, DCN ring over the slices (all
// of them, or a subset: MaxText's hybrid mesh of dcn_data x dcn_fsdp slices) on each shard, ICI
// all-gather (collective_plan.hpp); an all-gather or a reduce-scatter across slices (fsdp over
// the DCN) has one half of each.
#include "sim/collectives/collective_plan.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {

GroupPlan hierarchical_plan(const Machine& m, const GroupPlan* reduce_scatter,
                            const GroupPlan* all_gather, const std::vector<int>& members,
                            int slices) {
  const double n = static_cast<double>(members.size());
  GroupPlan plan = reduce_scatter ? *reduce_scatter : *all_gather;
  if (!reduce_scatter) plan.phases.clear();
  // Every member sends its shard's pieces to its image in the next slice of the ring over its
  // host's DCN links, each step 1/S of the shard. Only slice 0 is simulated, and a host's route
  // to any other slice is its DCN links (tx, then its share of the fabric), so a ring over a
  // subset of the slices differs from one over all of them only in its S.
  Ring ring;
  ring.members = members;
  for (int core : members) ring.next.push_back(m.dcn_route(core));
  ring.update_path_latency();
  std::vector<StepKind> kinds;
  if (reduce_scatter) kinds.push_back(StepKind::ReduceScatter);
  if (all_gather) kinds.push_back(StepKind::AllGather);
  for (StepKind kind : kinds) {
    PlanPhase phase;
    phase.kind = kind;
    phase.steps = slices - 1;
    phase.step_fraction = 1.0 / (n * slices);
    phase.rings.push_back(ring);
    phase.dcn = true;
    plan.phases.push_back(std::move(phase));
  }
  if (all_gather)
    plan.phases.insert(plan.phases.end(), all_gather->phases.begin(), all_gather->phases.end());
  return plan;
}

}  // namespace tpusim
