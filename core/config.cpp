#include "core/config.hpp"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/nearest_name.hpp"
#include "core/params.hpp"
#include "core/presets.hpp"

namespace tpusim {
namespace fs = std::filesystem;

std::string config_dir() {
  if (const char* env = std::getenv("TPUSIM_CONFIG_DIR"); env && *env) return env;
  return TPUSIM_CONFIG_DIR;
}

std::string read_file_bounded(const std::string& path, std::size_t max_bytes,
                              const char* limit_name) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (fs::is_directory(status)) throw ConfigError(path, "is a directory; expected a file");
  if (fs::exists(status) && !fs::is_regular_file(status) && !fs::is_fifo(status))
    throw ConfigError(path, "is not a regular file (a device?); expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "cannot open file");
  std::string out;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > max_bytes)
      throw ConfigError(path, "is larger than " + format_bytes(static_cast<double>(max_bytes)) +
                                  ", " +
                                  past_limit(static_cast<double>(max_bytes), "bytes", limit_name));
  }
  return out;
}

nlohmann::json read_json_file(const std::string& path) {
  return parse_json_text(read_file_bounded(path, kMaxTraceFileBytes, "kMaxTraceFileBytes"), path);
}

void deep_merge(nlohmann::json& base, const nlohmann::json& over) {
  if (!base.is_object() || !over.is_object()) {
    base = over;
    return;
  }
  for (auto it = over.begin(); it != over.end(); ++it) deep_merge(base[it.key()], it.value());
}

namespace {
// The presets are core/presets' registry: configs/NAME.json (chips), configs/topologies/ and
// configs/models/ (neither studies nor sweep files, which are no presets).
std::string find_preset(const std::string& name, const std::string& where) {
  if (std::string file = preset_file(name); !file.empty()) return file;
  std::string list;
  for (PresetKind kind : preset_kinds()) {
    std::string names;
    for (const auto& n : preset_names(kind)) names += (names.empty() ? "" : ", ") + n;
    list += (list.empty() ? "" : "; ") + std::string(to_string(kind)) + ": " + names;
  }
  throw ConfigError(where, "unknown preset '" + name + "'; presets in " + config_dir() + ": " +
                               list + did_you_mean_suffix(name, all_preset_names()));
}

void resolve(nlohmann::json& doc, const std::string& where, int depth, int& files) {
  if (!doc.is_object()) return;
  if (depth > 16)
    throw ConfigError(where, "presets nest more than 16 deep (a preset includes itself?)");
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "preset") continue;
    resolve(it.value(), where.empty() ? it.key() : where + "." + it.key(), depth, files);
  }
  auto p = doc.find("preset");
  if (p == doc.end()) return;
  const std::string path = where.empty() ? "preset" : where + ".preset";
  if (!p->is_string()) throw ConfigError(path, "expected a preset name (string), got " + p->dump());
  // Depth alone does not bound the work: presets that each include the next under several keys
  // fan out exponentially. Every file read counts.
  if (++files > kMaxPresetFiles)
    throw ConfigError(path, "the presets include more than " + std::to_string(kMaxPresetFiles) +
                                " preset files in all, " +
                                past_limit(kMaxPresetFiles, "files", "kMaxPresetFiles"));
  nlohmann::json base = read_json_file(find_preset(p->get<std::string>(), path));
  resolve(base, where, depth + 1, files);
  doc.erase("preset");
  deep_merge(base, doc);
  doc = std::move(base);
}
}  // namespace

void resolve_presets(nlohmann::json& doc, const std::string& where) {
  int files = 0;
  resolve(doc, where, 0, files);
}

void apply_set(nlohmann::json& doc, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set " + assignment, "expected path.to.key=value");
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  // Valid JSON is read as JSON with the limits of a file (nesting depth, unique keys); anything
  // else is a string.
  // JSON holds UTF-8 only: other bytes would fail later, when the study is written out.
  for (const auto& [what, part] : {std::pair{"path", &path}, std::pair{"value", &text}}) {
    try {
      (void)nlohmann::json(*part).dump();
    } catch (const nlohmann::json::type_error&) {
      throw ConfigError("--set", std::string("the ") + what +
                                     " is not UTF-8 text; JSON keys and strings must be");
    }
  }
  nlohmann::json value =
      nlohmann::json::accept(text) ? parse_json_text(text, "--set " + path) : nlohmann::json(text);
  set_study_value(doc, path, std::move(value));
}

void set_study_value(nlohmann::json& doc, const std::string& path, nlohmann::json value) {
  // A key under a shorthand (topology.slices where topology is "2x2") reaches its object form.
  for (auto dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
    const std::string above = path.substr(0, dot);
    const nlohmann::json* v = json_at(doc, above);
    if (!v || !v->is_string()) continue;
    nlohmann::json alone = nlohmann::json::object();
    json_set(alone, above, *v);
    expand_shorthands(alone);
    if (!json_at(alone, above)->is_string()) json_set(doc, above, *json_at(alone, above));
  }
  json_set(doc, path, std::move(value));
}

namespace {
// The study as validation sees it: presets resolved, --set applied, shorthands expanded.
nlohmann::json resolved_study(const nlohmann::json& input, const std::vector<std::string>& sets) {
  // One value per path: a second --set of the same path would silently win over the first.
  std::map<std::string, std::string> given;
  for (const auto& s : sets) {
    const std::string path = s.substr(0, s.find('='));
    auto [it, added] = given.emplace(path, s);
    if (!added)
      throw ConfigError("--set " + path, "is given twice ('" + it->second + "', then '" + s +
                                             "'); allowed: each path once");
  }
  nlohmann::json doc = input;
  // A --set of a preset ("preset=tpu_v4", "hardware.preset=...") replaces the preset the file
  // names before presets are resolved, as if written in the file: the file's own keys still
  // override it. Every other --set applies after, over everything.
  auto names_preset = [](const std::string& s) {
    const std::string path = s.substr(0, s.find('='));
    return path == "preset" ||
           (path.size() > 7 && path.compare(path.size() - 7, 7, ".preset") == 0);
  };
  for (const auto& s : sets)
    if (names_preset(s)) apply_set(doc, s);
  resolve_presets(doc);
  for (const auto& s : sets) {
    if (names_preset(s)) continue;
    apply_set(doc, s);
    resolve_presets(doc);
  }
  expand_shorthands(doc);
  resolve_presets(doc);
  return doc;
}

// Removes every key at the dotted `path` (a key may itself contain dots, as an unknown key can).
void erase_path(nlohmann::json& doc, const std::string& path) {
  if (!doc.is_object()) return;
  doc.erase(path);
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& key = it.key();
    if (path_within(path, key)) erase_path(it.value(), path.substr(key.size() + 1));
  }
}

// True if `path` is a parameter that decides which others apply (a `when` of some declaration),
// or a section that holds one.
bool holds_condition(const std::string& path) {
  for (const auto& s : ParamRegistry::instance().all()) {
    const std::string& c = s.when_path;
    if (!c.empty() && (c == path || path_within(c, path))) return true;
  }
  return false;
}
}  // namespace

Config load_config(const nlohmann::json& input, const std::vector<std::string>& sets) {
  nlohmann::json doc = resolved_study(input, sets);
  ProblemList problems;
  ParamRegistry::instance().validate_and_fill(doc, problems);
  problems.throw_if_any();
  return Config(std::move(doc));
}

ConfigCheck check_config(const nlohmann::json& input, const std::vector<std::string>& sets) {
  const nlohmann::json doc = resolved_study(input, sets);
  ConfigCheck out;
  nlohmann::json filled = doc;
  ProblemList problems;
  ParamRegistry::instance().validate_and_fill(filled, problems);
  if (problems.empty()) {
    out.config = Config(std::move(filled));
    return out;
  }
  out.problems = problems.items();
  for (const auto& p : out.problems)
    if (holds_condition(p.where)) return out;
  nlohmann::json stand_in = doc;
  for (const auto& p : out.problems) erase_path(stand_in, p.where);
  ProblemList again;
  ParamRegistry::instance().validate_and_fill(stand_in, again);
  if (again.empty()) out.stand_in = Config(std::move(stand_in));
  return out;
}

Config load_config_file(const std::string& path, const std::vector<std::string>& sets) {
  return load_config(read_json_file(path), sets);
}

// Where this thread records the paths it reads from any Config (null: not recording), in the
// order first read, each once: what a result computed from a study depends on. Read by
// models/workload.cpp's op-graph cache, which declares it; core/config.hpp, included by nearly
// every file, is left alone.
std::vector<std::string>*& config_read_record();
std::vector<std::string>*& config_read_record() {
  thread_local std::vector<std::string>* record = nullptr;
  return record;
}

namespace {
void note_read(const std::string& path) {
  std::vector<std::string>* r = config_read_record();
  if (r && std::find(r->begin(), r->end(), path) == r->end()) r->push_back(path);
}
}  // namespace

const nlohmann::json& Config::at(const std::string& path) const {
  note_read(path);
  const auto* v = json_at(doc_, path);
  assert(v && "parameter read but not declared or not filled");
  if (!v) throw std::logic_error("tpusim bug: parameter '" + path + "' read but not present");
  return *v;
}
bool Config::has(const std::string& path) const {
  note_read(path);
  return json_at(doc_, path) != nullptr;
}
double Config::number(const std::string& path) const { return at(path).get<double>(); }
std::int64_t Config::integer(const std::string& path) const {
  return static_cast<std::int64_t>(at(path).get<double>());
}
bool Config::boolean(const std::string& path) const { return at(path).get<bool>(); }
std::string Config::string(const std::string& path) const { return at(path).get<std::string>(); }
std::vector<std::int64_t> Config::integers(const std::string& path) const {
  std::vector<std::int64_t> out;
  for (const auto& e : at(path)) out.push_back(static_cast<std::int64_t>(e.get<double>()));
  return out;
}
std::vector<bool> Config::booleans(const std::string& path) const {
  std::vector<bool> out;
  for (const auto& e : at(path)) out.push_back(e.get<bool>());
  return out;
}

}  // namespace tpusim
