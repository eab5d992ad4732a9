#include "sim/collectives/cost_model.hpp"

#include <algorithm>

#include "sim/core/core_resources.hpp"
#include "sim/core/tensor_core_cost.hpp"

namespace tpusim {

StepWork CollectiveCostModel::step_work(const PlanPhase& phase, double bytes) const {
  StepWork w;
  w.per_member = phase.step_fraction * bytes;
  w.each_way = phase.bidirectional ? w.per_member / 2 : w.per_member;
  w.summed = phase.kind == StepKind::ReduceScatter ? w.per_member * phase.reduce_pieces : 0;
  return w;
}

double CollectiveCostModel::step_hbm_bytes(double sent, double summed) const {
  // A member receives what it sends. Summed on arrival, the received bytes reach HBM only as
  // the reduction's write of the sum.
  const double dma =
      options_.dma_hbm_traffic
          ? DmaEngines::hbm_bytes(sent, sent, options_.reduce_on_arrival ? summed : 0)
          : 0;
  return dma + reduction_hbm_bytes(summed);
}

std::pair<double, double> CollectiveCostModel::step_hbm_read_written(double sent,
                                                                     double summed) const {
  double read = 0, written = 0;
  if (options_.dma_hbm_traffic) {
    read += sent;
    written += std::max(0.0, sent - (options_.reduce_on_arrival ? summed : 0));
  }
  if (options_.reduction_compute && summed > 0) {
    read += (options_.reduce_on_arrival ? 1 : 2) * summed;  // the local operand (and the received)
    written += summed;                                      // the sum
  }
  return {read, written};
}

Duration CollectiveCostModel::reduction_vpu(double summed, DType dtype) const {
  if (!options_.reduction_compute || summed <= 0) return Duration{};
  // One vector add per element.
  return hw_.cycles(vpu_cycles(hw_, summed / dtype_bytes(dtype), 1.0));
}

double CollectiveCostModel::reduction_hbm_bytes(double summed) const {
  // Sum into the local buffer: read the local operand and write the sum, and (unless summed on
  // arrival) read back the received operand from HBM too.
  if (!options_.reduction_compute || summed <= 0) return 0;
  return (options_.reduce_on_arrival ? 2 : 3) * summed;
}

Duration CollectiveCostModel::step_time(const PlanPhase& p, double bytes, DType dtype) const {
  const StepWork w = step_work(p, bytes);
  const Duration transfer = Duration::seconds(w.each_way * p.link_s_per_byte) + p.path_latency;
  // A member's core: the DMA engines read what it sends and write what it receives (as much
  // as it sends), plus the reduction; uncontended by compute.
  const double hbm_bytes = step_hbm_bytes(w.per_member, w.summed);
  Duration core = (hw_.hbm_bandwidth_per_core * hw_.hbm_efficiency).time_for(hbm_bytes);
  if (reduction_hbm_latencies(w.summed) > 0) core += hw_.hbm_latency;
  core = max(core, reduction_vpu(w.summed, dtype));
  return max(transfer, core) + hw_.collective_step_overhead;
}

Duration CollectiveCostModel::predicted_time(const GroupPlan& plan, double bytes,
                                             DType dtype) const {
  Duration total = hw_.collective_launch;
  for (const auto& p : plan.phases) {
    if (p.steps == 0 || bytes <= 0) continue;
    total += step_time(p, bytes, dtype) * p.steps;
  }
  return total;
}

Duration CollectiveCostModel::predicted_time(const std::vector<const GroupPlan*>& plans,
                                             double bytes, DType dtype) const {
  Duration t;
  for (const GroupPlan* p : plans) t = max(t, predicted_time(*p, bytes, dtype));
  return t;
}

std::pair<double, double> crossing_per_byte(CollectiveKind kind, const CutShares& s) {
  switch (kind) {
    case CollectiveKind::AllReduce:
      return {s.straddling, s.straddling};
    case CollectiveKind::ReduceScatter:
      return {s.b_over_n, s.a_over_n};
    case CollectiveKind::AllGather:
      return {s.a_over_n, s.b_over_n};
    case CollectiveKind::AllToAll:
      return {s.ab_over_n, s.ab_over_n};
    case CollectiveKind::CollectivePermute:
      return {0, 0};
  }
  return {0, 0};
}

}  // namespace tpusim
