#pragma once
// The registry of presets: the JSON files under configs/ (config_dir()) that a study names with
// "preset": NAME. A preset is registered by its file, in the folder of its kind; every list of
// presets in a message comes from here.
#include <string>
#include <vector>

namespace tpusim {

enum class PresetKind {
  Chip,      ///< configs/NAME.json: a chip generation (hardware.*, its default topology)
  Topology,  ///< configs/topologies/NAME.json: a slice's wiring (topology.*)
  Model,     ///< configs/models/NAME.json: a model's dimensions (workload.*)
};

/// Every kind, in the order messages list them.
const std::vector<PresetKind>& preset_kinds();
/// "chip", "topology", "model".
const char* to_string(PresetKind kind);
/// The folder of `kind`'s files under config_dir(): "", "topologies", "models".
const char* preset_folder(PresetKind kind);

/// The presets of `kind`, sorted (the stems of the folder's *.json files).
std::vector<std::string> preset_names(PresetKind kind);
/// The presets of every kind, sorted.
std::vector<std::string> all_preset_names();
/// The file of the preset `name` (its folder searched in the order of preset_kinds()), or "" if
/// no kind holds it. A name with '/' or ".." is no preset.
std::string preset_file(const std::string& name);

}  // namespace tpusim
