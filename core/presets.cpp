#include "core/presets.hpp"

#include <algorithm>
#include <filesystem>

#include "core/config.hpp"

namespace tpusim {
namespace fs = std::filesystem;

const std::vector<PresetKind>& preset_kinds() {
  static const std::vector<PresetKind> kinds{PresetKind::Chip, PresetKind::Topology,
                                             PresetKind::Model};
  return kinds;
}

const char* to_string(PresetKind kind) {
  switch (kind) {
    case PresetKind::Chip:
      return "chip";
    case PresetKind::Topology:
      return "topology";
    case PresetKind::Model:
      return "model";
  }
  return "?";
}

const char* preset_folder(PresetKind kind) {
  switch (kind) {
    case PresetKind::Chip:
      return "";
    case PresetKind::Topology:
      return "topologies";
    case PresetKind::Model:
      return "models";
  }
  return "";
}

std::vector<std::string> preset_names(PresetKind kind) {
  std::vector<std::string> names;
  // The non-throwing overloads: a missing or unreadable folder holds no presets.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(config_dir()) / preset_folder(kind), ec))
    if (e.is_regular_file(ec) && e.path().extension() == ".json")
      names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> all_preset_names() {
  std::vector<std::string> names;
  for (PresetKind kind : preset_kinds())
    for (auto& n : preset_names(kind)) names.push_back(std::move(n));
  std::sort(names.begin(), names.end());
  return names;
}

std::string preset_file(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name.find("..") != std::string::npos)
    return "";
  std::error_code ec;  // a name too long for the file system is simply not found
  for (PresetKind kind : preset_kinds()) {
    const fs::path p = fs::path(config_dir()) / preset_folder(kind) / (name + ".json");
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

}  // namespace tpusim
