#pragma once
// The resources of one TensorCore as SystemC modules: its MXUs, its vector unit and its HBM port.
// Each is a work-conserving server that grants busy intervals: a request of W of busy time from
// time t takes the earliest free time at or after t (the intervals granted earlier keep theirs)
// and ends when the last of W is served. The modules have no process of their own: requests
// come from the core's process (a run of compute ops) and from collective steps, so they add no
// kernel events; contention shows as later grants, not as extra wake-ups.
#include <systemc>
#include <utility>
#include <vector>

#include "core/hardware.hpp"
#include "core/units.hpp"
#include "sim/tensor_core_cost.hpp"

namespace tpusim {

class CoreResource : public sc_core::sc_module {
 public:
  explicit CoreResource(sc_core::sc_module_name name) : sc_core::sc_module(name) {}
  /// Grants `work` of busy time from `from` on (from >= now); returns when it is all served.
  /// Intervals that ended before now are forgotten.
  Duration grant(Duration from, Duration work);
  /// True if nothing is granted after `from`.
  bool idle_after(Duration from) const { return head_ == iv_.size() || iv_.back().second <= from; }
  /// Counts `work` as busy without keeping its interval, for time nothing else can ask for (see
  /// CoreResources::compute).
  void count(Duration work) { busy_ += work; }
  Duration busy() const { return busy_; }  ///< every grant, summed (occupancy)
  std::size_t intervals() const { return iv_.size() - head_; }

 private:
  void prune(Duration now);
  std::vector<std::pair<Duration, Duration>> iv_;  ///< sorted, disjoint, not adjacent [start, end)
  std::size_t head_ = 0;                           ///< iv_[0, head_) ended before now
  Duration busy_;
};

class CoreResources : public sc_core::sc_module {
 public:
  /// `shared`: collective steps may run while the core computes (async collectives).
  CoreResources(sc_core::sc_module_name name, const HardwareSpec& hw, bool shared);

  /// True if a run of compute from `t` cannot meet other work: not shared, and nothing granted
  /// after `t` (always so with synchronous collectives: a core's collective steps are over
  /// before it computes again). Such a run takes its uncontended time; it only `count`s.
  bool exclusive_from(Duration t) const {
    return !shared_ && mxu.idle_after(t) && vpu.idle_after(t) && hbm.idle_after(t);
  }
  void count(const OpDemand& d) {
    mxu.count(d.mxu);
    vpu.count(d.vpu);
    hbm.count(d.hbm);
  }

  /// A compute op starting at `start` that takes `natural` uncontended: MXUs, vector unit and
  /// HBM work at once (as in the cost model); it ends at the later of start + natural and its
  /// last grant plus the op overhead. Uncontended that is exactly start + natural.
  Duration compute(Duration start, const OpDemand& d, Duration natural);

  /// A collective step's work on this core from `start`: `hbm_bytes` read and written by the
  /// DMA engines and the reduction, `vpu` of reduction on the vector unit, `hbm_latencies`
  /// HBM latencies in sequence after the HBM work (one per reduction step). Returns when both
  /// are through.
  Duration communicate(Duration start, double hbm_bytes, Duration vpu, int hbm_latencies);

  CoreResource mxu, vpu, hbm;

 private:
  const HardwareSpec& hw_;
  const bool shared_;
};

}  // namespace tpusim
