#include "tools/lib/chrome_trace.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <unordered_map>

#include "core/errors.hpp"

namespace tpusim::cli {

void ChromeTrace::span(int core, const std::string& name, const std::string& category,
                       Duration start, Duration end) {
  if (std::find(cores_seen_.begin(), cores_seen_.end(), core) == cores_seen_.end())
    cores_seen_.push_back(core);
  events_.push_back({{"name", name},
                     {"cat", category},
                     {"ph", "X"},
                     {"ts", start.us()},
                     {"dur", (end - start).us()},
                     {"pid", core / cores_per_chip_},
                     {"tid", core}});
}

void ChromeTrace::counter(const std::string& track, const std::string& name, Duration at,
                          double value) {
  events_.push_back(
      {{"name", track}, {"ph", "C"}, {"ts", at.us()}, {"pid", "links"}, {"args", {{name, value}}}});
}

void ChromeTrace::live_bytes_counters(const Program& program,
                                      const std::vector<double>& live_bytes) {
  if (live_bytes.size() != program.ops.size()) return;
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < program.ops.size(); ++i) index.emplace(program.ops[i].name, i);
  std::vector<nlohmann::json> counters;
  for (const auto& e : events_) {
    if (e["ph"] != "X") continue;
    const auto it = index.find(e["name"].get<std::string>());
    if (it == index.end()) continue;
    counters.push_back({{"name", "HBM live GiB, core " + std::to_string(e["tid"].get<int>())},
                        {"ph", "C"},
                        {"ts", e["ts"]},
                        {"pid", e["pid"]},
                        {"args", {{"GiB", live_bytes[it->second] / 1073741824.0}}}});
  }
  events_.insert(events_.end(), counters.begin(), counters.end());
}

void ChromeTrace::write(const std::string& path) const {
  nlohmann::json events = nlohmann::json::array();
  for (int core : cores_seen_) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", core / cores_per_chip_},
                      {"args", {{"name", "chip " + std::to_string(core / cores_per_chip_)}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", core / cores_per_chip_},
                      {"tid", core},
                      {"args", {{"name", "core " + std::to_string(core)}}}});
  }
  for (const auto& e : events_) events.push_back(e);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw ConfigError("--timeline", "cannot write '" + path + "'");
    out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump();
    if (!out) throw ConfigError("--timeline", "error writing '" + path + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw ConfigError("--timeline", "cannot write '" + path + "'");
}

std::vector<int> timeline_cores(int cores, int cores_per_chip, int all_up_to) {
  std::vector<int> out;
  if (cores <= all_up_to) {
    for (int c = 0; c < cores; ++c) out.push_back(c);
    return out;
  }
  const int chips = cores / cores_per_chip;
  for (int chip : {0, chips / 2, chips - 1})
    for (int k = 0; k < cores_per_chip; ++k) out.push_back(chip * cores_per_chip + k);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace tpusim::cli
