#pragma once
// The resources of one TensorCore as SystemC modules: its MXUs, its vector unit, its HBM port
// and its DMA engines. The first three are work-conserving servers that grant busy intervals: a
// request of W of busy time from time t takes the earliest free time at or after t (the intervals
// granted earlier keep theirs) and ends when the last of W is served. The modules have no process
// of their own: requests come from the core's process (a run of compute ops) and from collective
// steps, so they add no kernel events; contention shows as later grants, not as extra wake-ups.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <systemc>
#include <utility>
#include <vector>

#include "core/hardware.hpp"
#include "core/units.hpp"
#include "sim/core/tensor_core_cost.hpp"

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

/// The DMA engines of one TensorCore: they move its collective traffic between its HBM and the
/// links. Every stream (what a core sends to one neighbour in one collective step) holds one
/// engine from its issue until its data has arrived. With `engines` > 0 at most that many
/// streams are in flight on the core, and a step whose streams find too few free engines waits
/// (CollectiveEngine issues a step's streams in waves of at most `engines` per core); with 0
/// every stream issued is carried at once. What the streams move through HBM is booked on the
/// core's HBM port (`hbm_bytes`). Occupancy: engine time, streams and the most in flight.
class DmaEngines : public sc_core::sc_module {
 public:
  DmaEngines(sc_core::sc_module_name name, int engines)
      : sc_core::sc_module(name), engines_(engines) {}
  /// True if `streams` more can be issued at `now` (streams whose data is through by then have
  /// freed their engines).
  bool can_issue(int streams, Duration now) {
    retire(now);
    return engines_ == 0 || in_flight_ + streams <= engines_;
  }
  void issue(int streams, Duration now) {
    retire(now);
    in_flight_ += streams;
    streams_ += static_cast<std::uint64_t>(streams);
    peak_ = std::max(peak_, in_flight_);
  }
  /// `streams` issued at `issued` are through at `through` (at or after now: the message level
  /// knows it when it sends); their engines are free from then on.
  void complete(int streams, Duration issued, Duration through) {
    busy_ += (through - issued) * streams;
    ends_.emplace(through, streams);
  }
  /// A step waited `w` for free engines on this core.
  void waited(Duration w) { waiting_ += w; }

  /// HBM bytes of a core's streams in one step: what it sends is read from its HBM; what it
  /// receives is written into it, except the bytes a reduction sums as they stream in
  /// (`summed_on_arrival`), which reach HBM only as the sum (booked with the reduction).
  static double hbm_bytes(double sent, double received, double summed_on_arrival) {
    return sent + std::max(0.0, received - summed_on_arrival);
  }

  Duration busy() const { return busy_; }  ///< engine time, summed over streams
  Duration waiting() const { return waiting_; }
  std::uint64_t streams() const { return streams_; }
  int peak_in_flight() const { return peak_; }

 private:
  void retire(Duration now) {
    while (!ends_.empty() && ends_.top().first <= now) {
      in_flight_ -= ends_.top().second;
      ends_.pop();
    }
  }
  int engines_ = 0;
  int in_flight_ = 0;
  /// (through, streams) of issued streams still in flight, earliest first.
  std::priority_queue<std::pair<Duration, int>, std::vector<std::pair<Duration, int>>,
                      std::greater<>>
      ends_;
  int peak_ = 0;
  std::uint64_t streams_ = 0;
  Duration busy_, waiting_;
};

/// The four resource modules of a core. Not a module itself: built inside the TensorCore's
/// constructor, the modules are the core's children (multipod.chip(x,y).core0.mxu, ...).
class CoreResources {
 public:
  /// `shared`: collective steps may run while the core computes (async collectives).
  CoreResources(const HardwareSpec& hw, bool shared);

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
  /// DMA streams and the reduction, `vpu` of reduction on the vector unit, `hbm_latencies`
  /// HBM latencies in sequence after the HBM work (one per reduction step). Returns when both
  /// are through.
  Duration communicate(Duration start, double hbm_bytes, Duration vpu, int hbm_latencies);

  CoreResource mxu, vpu, hbm;
  DmaEngines dma;

 private:
  const HardwareSpec& hw_;
  const bool shared_;
};

}  // namespace tpusim
