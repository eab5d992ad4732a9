#pragma once
// One direction of one physical ICI link, or of the on-chip path between two cores. A link is a
// resource: a transfer holds it for bytes / bandwidth, FIFO; it arrives one latency later.
#include <systemc>
#include <utility>
#include <vector>

#include "core/units.hpp"

namespace tpusim {

class LinkModule : public sc_core::sc_module {
 public:
  LinkModule(sc_core::sc_module_name name, Bandwidth bandwidth, Duration latency)
      : sc_core::sc_module(name), bandwidth(bandwidth), latency(latency) {}

  const Bandwidth bandwidth;
  const Duration latency;
  /// Position in Machine::links(), for per-link tables.
  int index = -1;
  bool failed = false;  ///< carries nothing; routes avoid it (network.failed_links)
  /// When the link is free again (FIFO reservation).
  Duration busy_until;

  // Stats (plain members, incremented in the hot path; reported by the simulation).
  double bytes = 0;    ///< bytes carried
  Duration busy_time;  ///< time spent serialising bytes
  std::uint64_t transfers = 0;
  /// When set (timeline of this link wanted), every busy interval is recorded.
  std::vector<std::pair<Duration, Duration>>* busy_log = nullptr;
  void record_busy(Duration start, Duration end) {
    if (busy_log) busy_log->emplace_back(start, end);
  }
};

}  // namespace tpusim
