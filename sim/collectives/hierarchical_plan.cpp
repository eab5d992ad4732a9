// The hierarchical all-reduce of multislice: ICI reduce-scatter, DCN ring over the slices on
// each shard, ICI all-gather (collective_plan.hpp).
#include "sim/collectives/collective_plan.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {

GroupPlan hierarchical_plan(const Machine& m, const GroupPlan& reduce_scatter,
                            const GroupPlan& all_gather, const std::vector<int>& members) {
  const int slices = m.slices();
  const double n = static_cast<double>(members.size());
  GroupPlan plan = reduce_scatter;
  // Every member sends its shard's pieces to its image in the next slice over its host's DCN
  // links, each step 1/S of the shard.
  Ring ring;
  ring.members = members;
  for (int core : members) ring.next.push_back(m.dcn_route(core));
  ring.update_path_latency();
  for (StepKind kind : {StepKind::ReduceScatter, StepKind::AllGather}) {
    PlanPhase phase;
    phase.kind = kind;
    phase.steps = slices - 1;
    phase.step_fraction = 1.0 / (n * slices);
    phase.rings.push_back(ring);
    phase.dcn = true;
    plan.phases.push_back(std::move(phase));
  }
  plan.phases.insert(plan.phases.end(), all_gather.phases.begin(), all_gather.phases.end());
  return plan;
}

}  // namespace tpusim
