#include "tools/lib/study.hpp"

#include "core/errors.hpp"
#include "core/params.hpp"

namespace tpusim::cli {

Study load_study(const nlohmann::json& doc, const std::vector<std::string>& sets,
                 const std::string& source) {
  Study s;
  s.source = source;
  s.config = load_config(doc, sets);
  s.hardware = HardwareSpec::from_config(s.config);
  s.topology = topology_from_json(*json_at(s.config.json(), "topology"), "topology");
  return s;
}

Study load_study_file(const std::string& path, const std::vector<std::string>& sets) {
  return load_study(read_json_file(path), sets, path);
}

}  // namespace tpusim::cli
