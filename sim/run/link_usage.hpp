#pragma once
// What simulate() reports of the machine's links: their use over the run (the busiest, the mean,
// every link's statistics) and the timeline's utilisation counters of the traced chips' links.
#include <map>
#include <utility>
#include <vector>

#include "core/units.hpp"
#include "sim/run/simulation.hpp"

namespace tpusim {

class NetworkLink;
class Machine;
class TimelineSink;

/// The busy intervals of a link of a traced chip.
struct LinkLog {
  int chip = -1;
  std::vector<std::pair<Duration, Duration>> intervals;
};
using LinkLogs = std::map<NetworkLink*, LinkLog>;

/// Makes the links of the chips of `traced_cores` log their busy intervals.
LinkLogs log_traced_links(const Machine& machine, const std::vector<int>& traced_cores);
/// Utilisation of each logged link in fixed time bins, as timeline counters (0..1), on its
/// chip's track named by the link's place in the chip (ici.x+, onchip.0to1).
void emit_link_counters(TimelineSink& sink, const Machine& machine, const LinkLogs& logs,
                        Duration step);
/// r.links, and r.link_stats if `every_link` (r.step_time is set).
void report_links(const Machine& machine, bool every_link, SimReport& r);

}  // namespace tpusim
