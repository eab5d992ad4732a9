#pragma once
// A TensorCore's port onto the interconnect: what its DMA engines send in a collective leaves the
// core through it, towards the ICI links or the on-chip path to the other cores of its chip. It
// is a TLM-2.0 target socket (bound to itself: the port is the socket,
// `multipod.chip(x,y).core0.ici`) that the DMA engines' initiator socket reaches. Each wave of
// streams a core sends in a collective step is one loosely-timed b_transport, issued once the
// network level (sim/network) has answered when the wave is through: the annotated delay going in
// is that answer, the port's answer is when the transfer is through for this core. The built-in
// port answers the network's time and counts what leaves; the DMA engines reach it directly (serve)
// unless SimOptions::direct_access is off. The network level keeps the timing of the links (a batch
// per wave: the message level reserves every link of the batch hop by hop, which one transaction
// per stream would not).
#include <cstdint>
#include <systemc>
#include <tlm>

#include "core/units.hpp"
#include "sim/kernel/stats.hpp"

namespace tpusim {

/// What a transaction through a core's ICI port carries (as MemoryAccess does for a memory: the
/// generic payload moves no data): the bytes one wave of a collective step sends from the core.
struct IciTransfer : tlm::tlm_extension<IciTransfer> {
  double bytes = 0;  ///< the wave's streams from this core, summed
  int streams = 0;
  Duration issued;  ///< when the wave was issued
  int op = -1;      ///< the Program's collective op

  tlm::tlm_extension_base* clone() const override { return new IciTransfer(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const IciTransfer&>(other);
  }
};

class IciPort final : public tlm::tlm_target_socket<>,
                      public tlm::tlm_fw_transport_if<>,
                      public StatGroup {
 public:
  explicit IciPort(const char* name);

  /// The transfer is through at `through` (the network level's answer): the built-in port's
  /// answer, counted. What b_transport answers, for the DMA engines' direct path.
  Duration serve(Duration through, const IciTransfer& t) {
    bytes_sent_ += t.bytes;
    streams_ += static_cast<std::uint64_t>(t.streams);
    ++transfers_;
    transfer_time_ += through - t.issued;
    return through;
  }
  double bytes_sent() const { return bytes_sent_; }

  void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) override;
  // Loosely timed only: the rest of the forward interface refuses.
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& payload, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& payload, tlm::tlm_dmi& dmi) override;
  unsigned int transport_dbg(tlm::tlm_generic_payload& payload) override;

 private:
  double bytes_sent_ = 0;
  std::uint64_t streams_ = 0, transfers_ = 0;
  Duration transfer_time_;
};

}  // namespace tpusim
