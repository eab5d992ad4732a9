#pragma once
// The per-link utilisation export (--links-csv): one row per direction of every link.
#include <string>

#include "sim/run/simulation.hpp"

namespace tpusim::cli {

/// Writes link, bandwidth_GBps, bytes, busy_ms, utilization (busy / step time), transfers.
void write_link_csv(const std::string& path, const SimReport& report);

}  // namespace tpusim::cli
