// Resource booking of collective steps: what a step asks of its members' cores (the cost
// model's StepWork) granted on their HBM ports and vector units, and its streams issued on the
// sending cores' DMA engines.
#include <tuple>

#include "sim/collectives/collective_engine.hpp"
#include "sim/core/core_resources.hpp"
#include "sim/core/memory.hpp"

namespace tpusim {

Duration CollectiveEngine::book_step(int op_index, const Ring& ring, const StepWork& work,
                                     int steps, DType dtype, Duration start) {
  // Each member's core grants the step's work from `start`: its streams' HBM traffic (it sends
  // as much as it receives: the step's bytes over the members) and the reduction of what it
  // receives.
  double sent = 0;
  double members = static_cast<double>(ring.members.size());
  if (ring.represented_routes >= 0) {  // a projected ring: what the ring it stands for sends
    for (int k = 0; k < ring.represented_routes; ++k) sent += work.each_way * steps;
    members = ring.represented_members;
  } else {
    for (const auto* routes : {&ring.next, &ring.prev})
      for (const auto& r : *routes)
        if (!r.empty()) sent += work.each_way * steps;
  }
  const double hbm_bytes = model_.step_hbm_bytes(sent / members, work.summed * steps);
  const Duration vpu = model_.reduction_vpu(work.summed, dtype) * steps;
  const int latencies = model_.reduction_hbm_latencies(work.summed) * steps;
  MemoryAccess access;  // through each member's DMA engines to its memory
  std::tie(access.bytes_read, access.bytes_written) =
      model_.step_hbm_read_written(sent / members, work.summed * steps);
  access.collective = true;
  access.op = op_index;
  Duration cores_done = start;
  for (int core : ring.members)
    cores_done = max(cores_done, listener_.resources(core).communicate(start, access, hbm_bytes,
                                                                       vpu, latencies));
  return cores_done;
}

bool CollectiveEngine::issue_dma(const std::vector<std::pair<int, int>>& cores, Duration queued,
                                 Duration now) {
  if (hw_.dma_engines_per_core > 0)
    for (const auto& [core, n] : cores)
      if (!listener_.resources(core).dma.can_issue(n, now)) return false;
  for (const auto& [core, n] : cores) {
    DmaEngines& dma = listener_.resources(core).dma;
    if (now > queued) dma.waited(now - queued);
    dma.issue(n, now);
  }
  return true;
}

}  // namespace tpusim
