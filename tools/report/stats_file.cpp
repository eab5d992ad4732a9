#include "tools/report/stats_file.hpp"

#include "core/output_file.hpp"

namespace tpusim::cli {

nlohmann::json stats_json(const std::string& study, const SimReport& report) {
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [name, value] : report.stats.values) values[name] = value;
  nlohmann::json descriptions = nlohmann::json::object();
  for (const auto& [kind, d] : report.stats.descriptions)
    descriptions[kind] = {{"unit", d.first}, {"description", d.second}};
  return {{"schema_version", 1},           {"study", study},
          {"simulation", report.symmetry}, {"systemc_objects", report.systemc_objects},
          {"stats", std::move(values)},    {"descriptions", std::move(descriptions)}};
}

void write_stats_file(const std::string& path, const std::string& study, const SimReport& report) {
  write_output_file(path, stats_json(study, report).dump(1) + "\n");
}

}  // namespace tpusim::cli
