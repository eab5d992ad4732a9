#pragma once
// A study document: loaded from JSON, presets resolved, overrides applied, validated against the
// declared parameters, defaults filled. Components read typed values from it by path.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/units.hpp"

namespace tpusim {

/// Where preset files live: $TPUSIM_CONFIG_DIR, else the source tree's configs/.
std::string config_dir();

/// Parses JSON text; errors name `name` (a file), the line and column. Nesting deeper than
/// `max_depth` is an error too (so hostile input cannot exhaust the stack).
nlohmann::json parse_json_text(const std::string& text, const std::string& name,
                               int max_depth = 256);

/// The bytes of a file (a regular file or a pipe), refused past `max_bytes` (a limit of
/// core/limits.hpp, named `limit_name`) before more is read: a device such as /dev/zero or an
/// endless pipe ends in an error, not in exhausted memory.
std::string read_file_bounded(const std::string& path, std::size_t max_bytes,
                              const char* limit_name);

/// Parses a JSON file (at most kMaxTraceFileBytes). Errors name the file, line and column.
nlohmann::json read_json_file(const std::string& path);

/// Replaces every "preset": NAME key (at any depth) by the contents of the preset file, with the
/// object's other keys merged over it. NAME is looked up as configs/NAME.json, then
/// configs/*/NAME.json. `where` is the JSON path used in errors. At most kMaxPresetFiles files
/// are read in one call, however the presets nest.
void resolve_presets(nlohmann::json& doc, const std::string& where = "");

/// Recursively merges `over` into `base`: objects merge key by key, anything else replaces.
void deep_merge(nlohmann::json& base, const nlohmann::json& over);

/// Applies "path.to.key=value" (value parsed as JSON if it parses, else taken as a string).
void apply_set(nlohmann::json& doc, const std::string& assignment);

/// Sets `path` in `doc` to `value` as --set does: a key under a shorthand (topology.slices where
/// topology is "2x2" or "tpu_v4_4096") reaches the shorthand's object form, which keeps its name.
void set_study_value(nlohmann::json& doc, const std::string& path, nlohmann::json value);

/// A resolved, validated study. Access by dotted path; the path must be declared (asserted).
class Config {
 public:
  Config() = default;
  explicit Config(nlohmann::json resolved) : doc_(std::move(resolved)) {}
  const nlohmann::json& json() const { return doc_; }

  bool has(const std::string& path) const;
  double number(const std::string& path) const;
  std::int64_t integer(const std::string& path) const;
  bool boolean(const std::string& path) const;
  std::string string(const std::string& path) const;
  std::vector<std::int64_t> integers(const std::string& path) const;
  std::vector<bool> booleans(const std::string& path) const;
  Bandwidth GBps(const std::string& path) const { return Bandwidth::GBps(number(path)); }
  Duration ns(const std::string& path) const { return Duration::ns(number(path)); }

 private:
  const nlohmann::json& at(const std::string& path) const;
  nlohmann::json doc_;
};

/// Loads a study: file -> presets -> --set overrides -> validation (all problems at once) ->
/// defaults. Throws ConfigError listing every problem.
Config load_config(const nlohmann::json& doc, const std::vector<std::string>& sets = {});
Config load_config_file(const std::string& path, const std::vector<std::string>& sets = {});

/// What check_config finds: the study, or its problems and a stand-in.
struct ConfigCheck {
  Config config;                  ///< the study, when `problems` is empty
  std::vector<Problem> problems;  ///< every problem of validation, as load_config throws them
  /// With problems: the study with every path that has a problem (a wrong value, an unknown key,
  /// a section that is not an object) left out, so that the declared defaults stand in for them,
  /// validated and filled. None when that still has problems (a required value is missing), or
  /// when a problem is in a parameter that others depend on (workload.model): every parameter
  /// of the model would change with it.
  std::optional<Config> stand_in;
};

/// load_config that returns the problems of validation with a stand-in instead of throwing them.
/// Problems before validation (a preset, a --set, a topology shorthand) still throw ConfigError.
ConfigCheck check_config(const nlohmann::json& doc, const std::vector<std::string>& sets = {});

}  // namespace tpusim
