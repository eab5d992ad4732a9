#include "sim/core/ici_port.hpp"

#include <stdexcept>

#include "sim/core/sc_delay.hpp"
#include "sim/kernel/event_queue.hpp"

namespace tpusim {

IciPort::IciPort(const char* name) : tlm::tlm_target_socket<>(name), StatGroup("ici") {
  bind(static_cast<tlm::tlm_fw_transport_if<>&>(*this));
  reserve_stats(4);
  add_stat("bytes_sent", "bytes",
           "bytes the core's DMA engines sent through the port (collective streams, each counted "
           "once, however many links its route crosses)",
           [this] { return bytes_sent_; });
  add_stat("streams", "streams", "collective streams sent (as dma.streams)",
           [this] { return static_cast<double>(streams_); });
  add_stat("transfers", "transactions", "b_transport calls (or direct): one per wave of a step",
           [this] { return static_cast<double>(transfers_); });
  add_stat("transfer_ns", "ns",
           "each transfer's time from its issue until it is through (the network level's "
           "answer), summed",
           [this] { return transfer_time_.ns(); });
}

void IciPort::b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  const IciTransfer* t = payload.get_extension<IciTransfer>();
  if (!t) throw std::logic_error("tpusim bug: an ICI transaction without its IciTransfer");
  const Duration now = sim_now();
  delay = sc_delay(serve(now + from_sc(delay), *t) - now);
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

tlm::tlm_sync_enum IciPort::nb_transport_fw(tlm::tlm_generic_payload& payload, tlm::tlm_phase&,
                                            sc_core::sc_time&) {
  payload.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
  return tlm::TLM_COMPLETED;
}

bool IciPort::get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) { return false; }

unsigned int IciPort::transport_dbg(tlm::tlm_generic_payload&) { return 0; }

}  // namespace tpusim
