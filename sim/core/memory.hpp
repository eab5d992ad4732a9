#pragma once
// A TensorCore's memories behind TLM-2.0 target sockets: its HBM and, on a chip with CMEM
// (hardware.cmem.MiB_per_chip), its CMEM. The core's DMA engines (DmaEngines, the initiator) move
// every byte the core reads from or writes to them: a compute op's operands and results (between
// HBM or CMEM and the vector memory its units work from; the compiler decides which bytes CMEM
// serves, Op::cmem_bytes) and a collective step's streams (between HBM and the ICI). Each access
// is one loosely-timed b_transport: the payload's annotated delay says when the access starts
// (the initiator's local time ahead of the kernel, a compute run being temporally decoupled) and
// the target adds the access's time to it.
//
// The built-in HBM (Hbm) is a work-conserving port: an access holds it for its busy time (its
// bytes at hardware.hbm's achievable bandwidth) from its start or the port's first free time on,
// then one latency. The built-in CMEM (OnChipMemory) takes no time of its own, as in the cost
// model. A user's model plugs in through the same socket (SimOptions::memory_model,
// SimOptions::cmem_model; docs/systemc.md shows an HBM with bank conflicts). The DMA engines reach
// a built-in model directly, as TLM's direct memory interface would, through its serve(): the
// same answer without a transaction (SimOptions::direct_access); a user's model sees every one.
#include <functional>
#include <memory>
#include <systemc>
#include <tlm>

#include "core/hardware.hpp"
#include "core/units.hpp"
#include "sim/core/core_resources.hpp"
#include "sim/kernel/event_queue.hpp"
#include "sim/kernel/stats.hpp"

namespace tpusim {

/// What a tpusim memory transaction carries: the generic payload moves no data (tpusim simulates
/// time, not values: TLM_IGNORE_COMMAND, no data pointer), this extension says what moves.
struct MemoryAccess : tlm::tlm_extension<MemoryAccess> {
  double bytes_read = 0;
  double bytes_written = 0;
  /// The built-in port's busy time for these bytes: at the achievable HBM bandwidth, scaled down
  /// for an op whose measured duration is shorter than the model's and up on a slow chip.
  Duration work;
  Duration latency;  ///< after the work: HBM latencies in sequence
  /// Nothing else asks for the memory while this access runs (a compute run of a core whose
  /// collectives are synchronous): the built-in port only counts its busy time.
  bool uncontended = false;
  bool collective = false;  ///< a collective step's streams and reduction, else a compute op
  int op = -1;              ///< the Program op

  tlm::tlm_extension_base* clone() const override { return new MemoryAccess(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const MemoryAccess&>(other);
  }
};

/// What the core and its DMA engines see of one of its memories, a user's model or a built-in:
/// the target socket the DMA engines' initiator binds, the port's busy time and the counts, each
/// registered as a statistic of the memory (hbm, cmem, vmem: bytes_read, bytes_written, accesses,
/// busy_ns).
class CoreMemory : public StatGroup {
 public:
  explicit CoreMemory(const char* name);
  virtual ~CoreMemory() = default;
  virtual tlm::tlm_target_socket<>& target_socket() = 0;

  Duration busy() const { return port.busy(); }  ///< every access's busy time, summed
  bool idle_after(Duration t) const { return port.idle_after(t); }
  double bytes_read() const { return bytes_read_; }
  double bytes_written() const { return bytes_written_; }

 protected:
  /// The access a payload carries; a payload without one is a tpusim bug.
  static const MemoryAccess& access_of(const tlm::tlm_generic_payload& payload);
  void count_access(const MemoryAccess& a);
  CoreResource port;

 private:
  double bytes_read_ = 0, bytes_written_ = 0;
  double accesses_ = 0;
};

/// A memory model: a module whose target socket (`target`) is bound to the core's DMA engines.
/// Its statistics are named by its module (hbm, cmem, vmem).
/// A model implements b_transport: it reads the access (MemoryAccess), adds the time until the
/// access is through to `delay`, and sets the response status. It books its busy time on `port`
/// (grant, or count for an uncontended access) so that the report's HBM occupancy and the core's
/// runs see it, and calls count_access for the statistics.
class MemoryModel : public sc_core::sc_module,
                    public tlm::tlm_fw_transport_if<>,
                    public CoreMemory {
 public:
  explicit MemoryModel(sc_core::sc_module_name name);
  tlm::tlm_target_socket<> target;
  tlm::tlm_target_socket<>& target_socket() override { return target; }

  // Loosely timed only: the rest of the forward interface refuses.
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& payload, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& payload, tlm::tlm_dmi& dmi) override;
  unsigned int transport_dbg(tlm::tlm_generic_payload& payload) override;

 protected:
  /// When an access whose transaction annotates `delay` starts, as simulated time.
  static Duration start_of(const sc_core::sc_time& delay) { return sim_now() + from_sc(delay); }
  /// Sets `delay` to `end` less the kernel's time (`end` at or after now).
  static void annotate(sc_core::sc_time& delay, Duration end) {
    delay = sc_core::sc_time::from_value(static_cast<sc_dt::uint64>((end - sim_now()).ps()));
  }
};

/// A built-in memory: the target socket itself, bound to itself (as the ICI port is), so that a
/// core's built-in memories cost the kernel a socket each and no module
/// (multipod.chip(x,y).core0.hbm is the socket; a user's model is a module holding one).
class BuiltinMemory : public tlm::tlm_target_socket<>,
                      public tlm::tlm_fw_transport_if<>,
                      public CoreMemory {
 public:
  explicit BuiltinMemory(const char* name);
  tlm::tlm_target_socket<>& target_socket() override { return *this; }
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& payload, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& payload, tlm::tlm_dmi& dmi) override;
  unsigned int transport_dbg(tlm::tlm_generic_payload& payload) override;
};

/// hardware.hbm as the built-in port: busy time, then the latency. Final: a user's model derives
/// from MemoryModel, and the DMA engines reach exactly this one directly.
class Hbm final : public BuiltinMemory {
 public:
  explicit Hbm(const char* name) : BuiltinMemory(name) {}
  void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) override;
  /// When an access starting at `start` is through, counted: what b_transport answers, for the
  /// DMA engines' direct path.
  Duration serve(Duration start, const MemoryAccess& a) {
    count_access(a);
    if (a.uncontended) {
      port.count(a.work);
      return start + a.work + a.latency;
    }
    return port.grant(start, a.work) + a.latency;
  }
};

/// An on-chip memory the cost model gives no time of its own (the built-in CMEM: the compiler
/// moved its bytes off HBM; the built-in vector memory: the units work from it, the cost model
/// times the HBM side of each move): it counts each access, which is through when it starts.
class OnChipMemory final : public BuiltinMemory {
 public:
  explicit OnChipMemory(const char* name) : BuiltinMemory(name) {}
  void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) override;
  Duration serve(Duration start, const MemoryAccess& a) {
    count_access(a);
    return start;
  }
};

}  // namespace tpusim
