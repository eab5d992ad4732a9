#include "tools/report/link_csv.hpp"

#include "core/errors.hpp"
#include "tools/sweep/csv_table.hpp"

namespace tpusim::cli {

void write_link_csv(const std::string& path, const SimReport& report) {
  sweep::CsvTable table;
  table.header = {"link", "bandwidth_GBps", "bytes", "busy_ms", "utilization", "transfers"};
  const double step_s = report.step_time.seconds();
  for (const LinkStat& l : report.link_stats)
    table.rows.push_back({l.name, sweep::number_text(l.bandwidth_GBps), sweep::number_text(l.bytes),
                          sweep::number_text(l.busy.ms()),
                          sweep::number_text(step_s > 0 ? l.busy.seconds() / step_s : 0),
                          std::to_string(l.transfers)});
  try {
    sweep::write_csv(path, table);
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw ConfigError("--links-csv", e.what());
  }
}

}  // namespace tpusim::cli
