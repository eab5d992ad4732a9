#pragma once
// One direction of one physical ICI link, of the on-chip path between two cores, or of a host's
// data-center network interface or fabric share: what a network level keeps of it. A link is a
// resource: a transfer holds it for bytes / bandwidth, FIFO; it arrives one latency later.
// Not a SystemC object: the machine holds every link of its topology (routes and the symmetry
// search need them all) but elaborates modules only for the chips it simulates; it names a link
// as its place in the machine (Machine::link_name: multipod.chip(5,0).ici.x+).
#include <cstdint>
#include <utility>
#include <vector>

#include "core/units.hpp"

namespace tpusim {

class NetworkLink {
 public:
  NetworkLink(Bandwidth bandwidth, Duration latency) : bandwidth(bandwidth), latency(latency) {}

  const Bandwidth bandwidth;
  const Duration latency;
  /// Position in Machine::links(), for per-link tables.
  int index = -1;
  bool failed = false;  ///< carries nothing; routes avoid it (network.failed_links)
  /// When the link is free again (FIFO reservation).
  Duration busy_until;

  // Statistics (plain members, incremented in the hot path; the machine registers them under the
  // link's name, sim/machine/machine_stats.cpp).
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
