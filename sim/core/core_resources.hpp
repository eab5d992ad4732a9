#pragma once
// The resources of one TensorCore: its MXUs and its vector unit (work-conserving servers, plain
// members of the core), its memories (modules behind TLM-2.0 target sockets, sim/core/memory.hpp:
// its HBM, its vector memory and, on a chip with CMEM, its CMEM), its ICI port
// (sim/core/ici_port.hpp) and its DMA engines (an initiator socket bound to all). A
// server grants busy intervals: a request of W of busy time from time t takes the earliest free
// time at or after t (the intervals granted earlier keep theirs) and ends when the last of W is
// served. Nothing here has a process of its own: requests come from the core's process (a run of
// compute ops) and from collective steps, so they add no kernel events; contention shows as later
// grants, not as extra wake-ups.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <systemc>
#include <tlm>
#include <utility>
#include <vector>

// After <tlm>.
#include <tlm_utils/multi_passthrough_initiator_socket.h>

#include "core/hardware.hpp"
#include "core/units.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "sim/kernel/stats.hpp"

namespace tpusim {

struct MemoryAccess;
struct IciTransfer;
class CoreMemory;
class MemoryModel;
class Hbm;
class OnChipMemory;
class IciPort;
/// Makes a memory model of one core (`name`: its module name, a child of the core: hbm, cmem).
using MemoryFactory =
    std::function<std::unique_ptr<MemoryModel>(const char* name, const HardwareSpec& hw)>;

/// What a core's resources are built from besides the hardware.
struct CoreParts {
  bool shared = false;                    ///< async collectives: steps run while the core computes
  const MemoryFactory* memory = nullptr;  ///< the HBM model; null or empty: the built-in Hbm
  const MemoryFactory* cmem = nullptr;    ///< the CMEM model; null or empty: the built-in
  const MemoryFactory* vmem = nullptr;    ///< the vector memory's model; null or empty: built-in
  /// The DMA engines reach a built-in model directly, without a transaction (false: every access
  /// through the sockets, as a user's model sees them).
  bool direct = true;
};

class CoreResource {
 public:
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
/// core's memory (`hbm_bytes`). Occupancy: engine time, streams and the most in flight.
/// The engines are the initiator of every access of the core's memories and of everything it
/// sends (the engines are the initiator socket, multipod.chip(x,y).core0.dma, bound to the HBM's
/// target socket, the CMEM's where the chip has CMEM, the vector memory's and the core's ICI
/// port; no module around it: one SystemC object fewer per core): the compute ops' operands and
/// results too, which they move between HBM or CMEM and the vector memory.
class DmaEngines : public tlm_utils::multi_passthrough_initiator_socket<DmaEngines>,
                   public StatGroup {
 public:
  DmaEngines(const char* name, int engines);

  /// The core's targets, in the initiator's binding order, and the built-in ones among them,
  /// which accesses reach directly (null: through the socket).
  struct Targets {
    CoreMemory* hbm = nullptr;
    CoreMemory* cmem = nullptr;  ///< null: the chip has no CMEM
    CoreMemory* vmem = nullptr;
    IciPort* ici = nullptr;
    Hbm* direct_hbm = nullptr;
    OnChipMemory* direct_cmem = nullptr;
    OnChipMemory* direct_vmem = nullptr;
    IciPort* direct_ici = nullptr;
  };
  /// Binds the initiator to the core's targets: the HBM's first, then the CMEM's if any, the
  /// vector memory's, the ICI port's.
  void connect(const Targets& t);

  /// One access of the core's HBM, starting at `start` (at or after now: the initiator's local
  /// time ahead of the kernel is the transaction's delay): a b_transport through the socket.
  /// Returns when the access is through.
  Duration access(Duration start, const MemoryAccess& a);
  /// One access of the core's CMEM, likewise; a core without CMEM answers `start`.
  Duration access_cmem(Duration start, const MemoryAccess& a);
  /// One access of the core's vector memory (VMEM), likewise: what an HBM access moved lands
  /// there (and what it wrote back left from there), from when the HBM access is through.
  Duration access_vmem(Duration start, const MemoryAccess& a);
  /// A wave of streams this core sent, through at `through` by the network level's answer: a
  /// b_transport through the core's ICI port. Returns when the port says it is through.
  Duration send(Duration through, const IciTransfer& t);
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
  /// A b_transport of `payload` through the initiator's binding `target`, starting at `start`.
  Duration transport(int target, tlm::tlm_generic_payload& payload, Duration start);
  tlm::tlm_generic_payload payload_;  ///< reused by every access (b_transport is blocking)
  MemoryAccess* access_ = nullptr;    ///< payload_'s extension, owned by it
  tlm::tlm_generic_payload send_payload_;
  IciTransfer* transfer_ = nullptr;                            ///< send_payload_'s extension
  int cmem_target_ = -1, vmem_target_ = -1, ici_target_ = -1;  ///< bindings (the HBM's is 0)
  Hbm* direct_hbm_ = nullptr;
  OnChipMemory* direct_cmem_ = nullptr;
  OnChipMemory* direct_vmem_ = nullptr;
  IciPort* direct_ici_ = nullptr;
};

/// The resources of a core. Not a module itself: built inside the TensorCore's constructor, the
/// memories, the ICI port and the DMA engines are the core's children
/// (multipod.chip(x,y).core0.hbm, .cmem, .vmem, .ici, .dma).
class CoreResources {
 public:
  CoreResources(const HardwareSpec& hw, const CoreParts& parts);
  ~CoreResources();

  /// True if a run of compute from `t` cannot meet other work: not shared, and nothing granted
  /// after `t` (always so with synchronous collectives: a core's collective steps are over
  /// before it computes again). Such a run takes its uncontended time; it only `count`s.
  bool exclusive_from(Duration t) const;
  /// Counts an exclusive run's MXU and vector-unit work (its memory accesses went through
  /// the socket, each marked uncontended).
  void count(const OpDemand& d) {
    mxu.count(d.mxu);
    vpu.count(d.vpu);
  }

  /// A compute op starting at `start` that takes `natural` uncontended: MXUs, vector unit and
  /// memory work at once (as in the cost model); it ends at the later of start + natural and its
  /// last grant (or memory answer) plus the op overhead. Uncontended, with the built-in
  /// memories, that is exactly start + natural. `access`: the op's HBM access (work and latency
  /// from `d`), whose bytes then land in (leave) the vector memory by `vmem`; `cmem`: its CMEM
  /// access, or null.
  Duration compute(Duration start, const OpDemand& d, Duration natural, MemoryAccess& access,
                   const MemoryAccess& vmem, const MemoryAccess* cmem);

  /// A collective step's work on this core from `start`: `access` read and written by the
  /// DMA streams and the reduction (its work is set here from its bytes), `vpu` of reduction on
  /// the vector unit, `hbm_latencies` HBM latencies in sequence after the memory work (one per
  /// reduction step). Returns when both are through.
  Duration communicate(Duration start, MemoryAccess& access, double hbm_bytes, Duration vpu,
                       int hbm_latencies);

  CoreMemory& memory() const { return *memory_; }
  CoreMemory* cmem() const { return cmem_.get(); }  ///< null: the chip has no CMEM
  CoreMemory& vmem() const { return *vmem_; }
  const IciPort& ici() const { return *ici_; }
  CoreResource mxu, vpu;

 private:
  std::unique_ptr<CoreMemory> memory_;
  std::unique_ptr<CoreMemory> cmem_;
  std::unique_ptr<CoreMemory> vmem_;
  std::unique_ptr<IciPort> ici_;

 public:
  DmaEngines dma;

 private:
  const HardwareSpec& hw_;
  const bool shared_;
};

}  // namespace tpusim
