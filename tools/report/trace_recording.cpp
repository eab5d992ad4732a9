#include "tools/report/trace_recording.hpp"

#include "traces/format/trace_format.hpp"

namespace tpusim::cli {

void record_trace(const Study& study, const Program& program, const std::string& path) {
  nlohmann::json recorded_on = {
      {"source", "tpusim run"}, {"study", study.source}, {"topology", to_json(study.topology)}};
  const auto& cfg = study.config.json();
  if (cfg.contains("hardware")) recorded_on["hardware"] = cfg["hardware"];
  // The whole resolved study: network, collective algorithms and calibration settings too, so
  // a replay on the same machine reproduces the run exactly.
  recorded_on["config"] = cfg;
  write_trace(program, path, recorded_on);
}

nlohmann::json recorded_study_doc(const nlohmann::json& rec) {
  auto recorded = [&](const char* key) {
    return rec.is_object() && rec.contains(key) && rec[key].is_object();
  };
  nlohmann::json doc = {{"preset", "tpu_v3"}};
  if (recorded("config")) {
    doc = rec["config"];
    doc.erase("topology");
  } else if (recorded("hardware")) {
    doc["hardware"] = rec["hardware"];
  }
  return doc;
}

}  // namespace tpusim::cli
