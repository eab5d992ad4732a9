#include "sim/run/link_usage.hpp"

#include <algorithm>
#include <string>

#include "sim/kernel/timeline.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {

LinkLogs log_traced_links(const Machine& machine, const std::vector<int>& traced_cores) {
  LinkLogs logs;
  for (int c : traced_cores)
    if (c >= 0 && c < machine.num_cores())
      for (NetworkLink* l : machine.links_of_chip(machine.chip_of(c))) {
        logs[l].chip = machine.chip_of(c);
        l->busy_log = &logs[l].intervals;
      }
  return logs;
}

void emit_link_counters(TimelineSink& sink, const Machine& machine, const LinkLogs& logs,
                        Duration step) {
  const int bins = 200;
  if (step <= Duration{}) return;
  const double bin_ps = static_cast<double>(step.ps()) / bins;
  // By chip and link name: the map's order is the links' addresses, which differ between runs
  // (a longer file name in the arguments moves the heap), and the timeline would with them.
  std::vector<std::pair<std::string, const LinkLog*>> ordered;
  for (const auto& [link, log] : logs) ordered.emplace_back(machine.link_place_name(*link), &log);
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    if (a.second->chip != b.second->chip) return a.second->chip < b.second->chip;
    return a.first < b.first;
  });
  for (const auto& [track, log_ptr] : ordered) {
    const LinkLog& log = *log_ptr;
    std::vector<double> busy(bins, 0.0);
    for (const auto& [a, b] : log.intervals) {
      double s = static_cast<double>(a.ps()), e = static_cast<double>(b.ps());
      for (int k = std::max(0, static_cast<int>(s / bin_ps)); k < bins && k * bin_ps < e; ++k) {
        const double lo = std::max(s, k * bin_ps), hi = std::min(e, (k + 1) * bin_ps);
        if (hi > lo) busy[k] += hi - lo;
      }
    }
    for (int k = 0; k < bins; ++k)
      sink.counter(log.chip, track, "utilization",
                   Duration::ps(static_cast<std::int64_t>(k * bin_ps)),
                   std::min(1.0, busy[k] / bin_ps));
  }
}

void report_links(const Machine& machine, bool every_link, SimReport& r) {
  double busiest = 0, sum = 0;
  std::size_t ici = 0;
  const NetworkLink *busiest_ici = nullptr, *busiest_dcn = nullptr;
  for (const NetworkLink* l : machine.links()) {
    const double u = r.step_time > Duration{} ? l->busy_time.seconds() / r.step_time.seconds() : 0;
    if (machine.is_dcn_link(*l)) {
      if (machine.is_dcn_tx(*l)) r.dcn.bytes_per_chip += l->bytes / machine.topology().num_chips();
      if (u > r.dcn.busiest_utilization) {
        r.dcn.busiest_utilization = u;
        busiest_dcn = l;
      }
      continue;
    }
    ++ici;
    sum += u;
    r.links.total_bytes += l->bytes;
    if (u > busiest) {
      busiest = u;
      busiest_ici = l;
    }
  }
  if (busiest_dcn) r.dcn.busiest_link = machine.link_name(*busiest_dcn);
  if (busiest_ici) r.links.busiest_link = machine.link_name(*busiest_ici);
  if (every_link)
    for (const NetworkLink* l : machine.links())
      r.link_stats.push_back(
          {machine.link_name(*l), l->bandwidth.GBps(), l->bytes, l->busy_time, l->transfers});
  r.links.busiest_utilization = busiest;
  r.links.mean_utilization = ici == 0 ? 0 : sum / ici;
}

}  // namespace tpusim
