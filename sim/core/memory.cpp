#include "sim/core/memory.hpp"

#include <cstring>
#include <stdexcept>

#include "sim/core/sc_delay.hpp"

namespace tpusim {

namespace {
/// The kind of a memory's statistics: its module's name for the core's memories, else "memory".
const char* memory_kind(const char* leaf) {
  for (const char* kind : {"hbm", "cmem", "vmem"})
    if (std::strcmp(leaf, kind) == 0) return kind;
  return "memory";
}
}  // namespace

CoreMemory::CoreMemory(const char* name) : StatGroup(memory_kind(name)) {
  reserve_stats(4);
  add_stat("bytes_read", "bytes",
           "bytes read from the memory (HBM: compute ops and collective steps; CMEM and VMEM: "
           "compute ops)",
           [this] { return bytes_read_; });
  add_stat("bytes_written", "bytes", "bytes written into the memory",
           [this] { return bytes_written_; });
  add_stat("accesses", "transactions",
           "accesses (b_transport calls, or the DMA engines' direct path to a built-in model): "
           "one per compute op with traffic here, one per collective step (HBM)",
           [this] { return accesses_; });
  add_stat("busy_ns", "ns",
           "time the memory's port was busy (every access's busy time; the report's "
           "occupancy.hbm_busy_ms on the last core)",
           [this] { return port.busy().ns(); });
}

MemoryModel::MemoryModel(sc_core::sc_module_name name)
    : sc_core::sc_module(name), CoreMemory(name), target("target") {
  target.bind(*this);
}

BuiltinMemory::BuiltinMemory(const char* name) : tlm::tlm_target_socket<>(name), CoreMemory(name) {
  bind(static_cast<tlm::tlm_fw_transport_if<>&>(*this));
}

const MemoryAccess& CoreMemory::access_of(const tlm::tlm_generic_payload& payload) {
  const MemoryAccess* a = payload.get_extension<MemoryAccess>();
  if (!a) throw std::logic_error("tpusim bug: a memory transaction without its MemoryAccess");
  return *a;
}

void CoreMemory::count_access(const MemoryAccess& a) {
  bytes_read_ += a.bytes_read;
  bytes_written_ += a.bytes_written;
  accesses_ += 1;
}

tlm::tlm_sync_enum MemoryModel::nb_transport_fw(tlm::tlm_generic_payload& payload, tlm::tlm_phase&,
                                                sc_core::sc_time&) {
  payload.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
  return tlm::TLM_COMPLETED;
}

bool MemoryModel::get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) { return false; }

unsigned int MemoryModel::transport_dbg(tlm::tlm_generic_payload&) { return 0; }

tlm::tlm_sync_enum BuiltinMemory::nb_transport_fw(tlm::tlm_generic_payload& payload,
                                                  tlm::tlm_phase&, sc_core::sc_time&) {
  payload.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
  return tlm::TLM_COMPLETED;
}

bool BuiltinMemory::get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) { return false; }

unsigned int BuiltinMemory::transport_dbg(tlm::tlm_generic_payload&) { return 0; }

void Hbm::b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  const Duration now = sim_now();
  delay = sc_delay(serve(now + from_sc(delay), access_of(payload)) - now);
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

void OnChipMemory::b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time&) {
  count_access(access_of(payload));  // through when it starts: the delay stays
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace tpusim
