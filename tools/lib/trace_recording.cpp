#include "tools/lib/trace_recording.hpp"

#include "models/trace/trace_format.hpp"

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

}  // namespace tpusim::cli
