#include "core/config.hpp"

#include <cassert>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"
#include "core/params.hpp"

namespace tpusim {
namespace fs = std::filesystem;

std::string config_dir() {
  if (const char* env = std::getenv("TPUSIM_CONFIG_DIR"); env && *env) return env;
  return TPUSIM_CONFIG_DIR;
}

nlohmann::json parse_json_text(const std::string& text, const std::string& name, int max_depth) {
  auto depth_guard = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > max_depth)
      throw ConfigError(name, "JSON nested deeper than " + std::to_string(max_depth) + " levels");
    return true;
  };
  try {
    return nlohmann::json::parse(text, depth_guard);
  } catch (const nlohmann::json::parse_error& e) {
    // Turn the byte offset into line:column.
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string msg = e.what();
    auto pos = msg.find("error while parsing");
    if (pos != std::string::npos) msg = msg.substr(pos);
    throw ConfigError(name + ":" + std::to_string(line) + ":" + std::to_string(col),
                      "malformed JSON (" + msg + ")");
  } catch (const nlohmann::json::exception& e) {
    // Not a parse_error but still bad input: a number such as 1e999 that overflows a double.
    throw ConfigError(name, std::string("malformed JSON (") + e.what() + ")");
  }
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_json_text(ss.str(), path);
}

void deep_merge(nlohmann::json& base, const nlohmann::json& over) {
  if (!base.is_object() || !over.is_object()) {
    base = over;
    return;
  }
  for (auto it = over.begin(); it != over.end(); ++it) deep_merge(base[it.key()], it.value());
}

namespace {
std::string find_preset(const std::string& name, const std::string& where) {
  const fs::path dir = config_dir();
  std::vector<std::string> known;
  if (name.find('/') == std::string::npos && name.find("..") == std::string::npos) {
    if (fs::exists(dir / (name + ".json"))) return (dir / (name + ".json")).string();
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (!entry.is_directory() || entry.path().filename() == "studies") continue;
      fs::path p = entry.path() / (name + ".json");
      if (fs::exists(p)) return p.string();
    }
  }
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json" && entry.path().parent_path().filename() != "studies")
      known.push_back(entry.path().stem().string());
  }
  std::sort(known.begin(), known.end());
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  throw ConfigError(where,
                    "unknown preset '" + name + "'; presets in " + dir.string() + ": " + list);
}

void resolve(nlohmann::json& doc, const std::string& where, int depth) {
  if (!doc.is_object()) return;
  if (depth > 16)
    throw ConfigError(where, "presets nest more than 16 deep (a preset includes itself?)");
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "preset") continue;
    resolve(it.value(), where.empty() ? it.key() : where + "." + it.key(), depth);
  }
  auto p = doc.find("preset");
  if (p == doc.end()) return;
  const std::string path = where.empty() ? "preset" : where + ".preset";
  if (!p->is_string()) throw ConfigError(path, "expected a preset name (string), got " + p->dump());
  nlohmann::json base = read_json_file(find_preset(p->get<std::string>(), path));
  resolve(base, where, depth + 1);
  doc.erase("preset");
  deep_merge(base, doc);
  doc = std::move(base);
}
}  // namespace

void resolve_presets(nlohmann::json& doc, const std::string& where) { resolve(doc, where, 0); }

void apply_set(nlohmann::json& doc, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set " + assignment, "expected path.to.key=value");
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;
  json_set(doc, path, std::move(value));
}

Config load_config(const nlohmann::json& input, const std::vector<std::string>& sets) {
  nlohmann::json doc = input;
  resolve_presets(doc);
  for (const auto& s : sets) {
    apply_set(doc, s);
    resolve_presets(doc);
  }
  expand_shorthands(doc);
  resolve_presets(doc);
  ProblemList problems;
  ParamRegistry::instance().validate_and_fill(doc, problems);
  problems.throw_if_any();
  return Config(std::move(doc));
}

Config load_config_file(const std::string& path, const std::vector<std::string>& sets) {
  return load_config(read_json_file(path), sets);
}

const nlohmann::json& Config::at(const std::string& path) const {
  const auto* v = json_at(doc_, path);
  assert(v && "parameter read but not declared or not filled");
  if (!v) throw std::logic_error("tpusim bug: parameter '" + path + "' read but not present");
  return *v;
}
bool Config::has(const std::string& path) const { return json_at(doc_, path) != nullptr; }
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
