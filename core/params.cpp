#include "core/params.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "core/limits.hpp"
#include "core/nearest_name.hpp"

namespace tpusim {

const char* to_string(ParamType t) {
  switch (t) {
    case ParamType::Integer:
      return "integer";
    case ParamType::Number:
      return "number";
    case ParamType::Boolean:
      return "boolean";
    case ParamType::String:
      return "string";
    case ParamType::IntegerList:
      return "list of integers";
    case ParamType::BooleanList:
      return "list of booleans";
    case ParamType::NumberList:
      return "list of numbers";
  }
  return "?";
}

ParamRegistry& ParamRegistry::mutable_instance() {
  static ParamRegistry registry;
  return registry;
}
const ParamRegistry& ParamRegistry::instance() { return mutable_instance(); }

void ParamRegistry::declare(ParamSpec spec) { mutable_instance().add(std::move(spec)); }

void ParamRegistry::add(ParamSpec spec) {
  for (const auto* found : find(spec.path)) {
    const ParamSpec& s = *found;
    const bool overlap = s.when_path.empty() || spec.when_path.empty() ||
                         (s.when_path == spec.when_path && s.when_value == spec.when_value);
    if (overlap)
      throw std::logic_error("tpusim bug: parameter '" + spec.path + "' is declared twice" +
                             (spec.when_path.empty()
                                  ? std::string()
                                  : " for " + spec.when_path + " = " + spec.when_value));
  }
  by_path_[spec.path].push_back(specs_.size());
  for (auto dot = spec.path.find('.'); dot != std::string::npos; dot = spec.path.find('.', dot + 1))
    sections_.insert(spec.path.substr(0, dot));
  specs_.push_back(std::move(spec));
}

ParamRegistrar::ParamRegistrar(std::initializer_list<ParamSpec> specs) {
  for (const auto& s : specs) ParamRegistry::declare(s);
}

std::vector<std::string> ParamSpec::allowed_choices() const {
  std::vector<std::string> out = choices;
  if (choices_from)
    for (auto& name : choices_from()) out.push_back(std::move(name));
  return out;
}

ParamSpec label_param(std::string path, std::string default_value, std::string meaning) {
  ParamSpec s;
  s.path = std::move(path);
  s.type = ParamType::String;
  s.default_value = std::move(default_value);
  s.meaning = std::move(meaning);
  s.label = true;
  return s;
}

std::vector<const ParamSpec*> ParamRegistry::find(const std::string& path) const {
  std::vector<const ParamSpec*> out;
  if (const auto it = by_path_.find(path); it != by_path_.end())
    for (std::size_t i : it->second) out.push_back(&specs_[i]);
  return out;
}

bool ParamRegistry::is_section(const std::string& path) const { return sections_.count(path) > 0; }

namespace {
struct ShorthandEntry {
  std::string path;
  Shorthand expand;
  ShorthandCompletion complete;
};
std::vector<ShorthandEntry>& shorthands() {
  static std::vector<ShorthandEntry> list;
  return list;
}
}  // namespace

ShorthandRegistrar::ShorthandRegistrar(const char* path, Shorthand expand,
                                       ShorthandCompletion complete) {
  shorthands().push_back({path, expand, complete});
}

void expand_shorthands(nlohmann::json& doc) {
  for (const auto& [path, expand, complete] : shorthands()) {
    const auto* v = json_at(doc, path);
    if (v && v->is_string()) json_set(doc, path, expand(v->get<std::string>(), path));
    if (v && v->is_object() && complete) {
      nlohmann::json object = *v;
      complete(object);
      json_set(doc, path, std::move(object));
    }
  }
}

bool path_within(const std::string& path, const std::string& section) {
  return path.size() > section.size() && path.compare(0, section.size(), section) == 0 &&
         path[section.size()] == '.';
}

const nlohmann::json* json_at(const nlohmann::json& doc, const std::string& path) {
  const nlohmann::json* cur = &doc;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t dot = path.find('.', start);
    std::string key =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

void json_set(nlohmann::json& doc, const std::string& path, nlohmann::json value) {
  nlohmann::json* cur = &doc;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = path.find('.', start);
    std::string key =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) throw ConfigError(path, "empty key in path");
    if (cur->is_null()) *cur = nlohmann::json::object();
    if (!cur->is_object())
      throw ConfigError(path, "cannot set '" + key + "': its parent is a " +
                                  std::string(cur->type_name()) + ", not an object");
    if (dot == std::string::npos) {
      (*cur)[key] = std::move(value);
      return;
    }
    cur = &(*cur)[key];
    start = dot + 1;
  }
}

namespace {

std::string show(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// Bounds as messages write numbers (format_number: 1048576, not 1.04858e+06).
std::string range_text(const ParamSpec& s) {
  bool lo = std::isfinite(s.min), hi = std::isfinite(s.max);
  if (lo && hi) return " from " + format_number(s.min) + " to " + format_number(s.max);
  if (lo) return " >= " + format_number(s.min);
  if (hi) return " <= " + format_number(s.max);
  return "";
}

std::string allowed_text(const ParamSpec& s) {
  const std::string type = to_string(s.type);
  std::string t = (type[0] == 'i' ? "an " : "a ") + type;
  if (const auto choices = s.allowed_choices(); !choices.empty()) {
    t = "one of";
    for (std::size_t i = 0; i < choices.size(); ++i) t += (i ? ", " : " ") + choices[i];
  }
  // A range applies to numbers (and list elements); choices of a string have none.
  return s.type == ParamType::String || s.type == ParamType::Boolean ||
                 s.type == ParamType::BooleanList
             ? t
             : t + range_text(s);
}

bool number_ok(const ParamSpec& s, const nlohmann::json& v, bool integer) {
  if (!v.is_number()) return false;
  if (integer && !v.is_number_integer()) {
    double d = v.get<double>();
    if (std::floor(d) != d) return false;
  }
  double d = v.get<double>();
  return std::isfinite(d) && d >= s.min && d <= s.max;
}

bool value_ok(const ParamSpec& s, const nlohmann::json& v) {
  switch (s.type) {
    case ParamType::Integer:
      return number_ok(s, v, true);
    case ParamType::Number:
      return number_ok(s, v, false);
    case ParamType::Boolean:
      return v.is_boolean();
    case ParamType::String: {
      if (!v.is_string()) return false;
      const auto choices = s.allowed_choices();
      return choices.empty() ||
             std::find(choices.begin(), choices.end(), v.get<std::string>()) != choices.end();
    }
    case ParamType::IntegerList:
    case ParamType::NumberList:
    case ParamType::BooleanList: {
      if (!v.is_array()) return false;
      for (const auto& e : v) {
        if (s.type == ParamType::BooleanList ? !e.is_boolean()
                                             : !number_ok(s, e, s.type == ParamType::IntegerList))
          return false;
      }
      return true;
    }
  }
  return false;
}

}  // namespace

namespace {

/// One validate_and_fill pass over a study document: the walk of what is given, then the
/// defaults and the required values.
struct ParamCheck {
  const ParamRegistry& reg;
  nlohmann::json& doc;
  ProblemList& problems;

  // Which declarations apply: those without a condition, and those whose condition parameter
  // (given or defaulted) has the named value.
  std::string condition_value(const std::string& path) const {
    if (const auto* v = json_at(doc, path); v && v->is_string()) return v->get<std::string>();
    for (const auto* s : reg.find(path))
      if (s->default_value.is_string()) return s->default_value.get<std::string>();
    return {};
  }
  bool condition_valid(const std::string& path) const {
    const auto* v = json_at(doc, path);
    if (!v) return true;
    for (const auto* spec : reg.find(path))
      if (spec->when_path.empty()) return value_ok(*spec, *v);
    return true;
  }
  bool applies(const ParamSpec& s) const {
    return s.when_path.empty() || condition_value(s.when_path) == s.when_value;
  }

  /// Walk what is given.
  void walk(nlohmann::json& obj, const std::string& prefix) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      // Keys that begin with '_' are comments (documented in the README), e.g. "_why".
      if (!it.key().empty() && it.key()[0] == '_') continue;
      const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
      auto specs = reg.find(path);
      const ParamSpec* spec = nullptr;
      for (const auto* s : specs)
        if (applies(*s)) spec = s;
      if (spec) {
        if (!value_ok(*spec, it.value()))
          problems.add(
              path, show(it.value()) + " is not allowed; expected " + allowed_text(*spec) +
                        (spec->unit.empty() ? "" : " (" + spec->unit + ")") +
                        (it.value().is_string() ? did_you_mean_suffix(it.value().get<std::string>(),
                                                                      spec->allowed_choices())
                                                : ""));
        continue;
      }
      if (reg.is_section(path)) {
        if (!it.value().is_object()) {
          problems.add(path,
                       "expected an object (a section of parameters), got " + show(it.value()));
          continue;
        }
        walk(it.value(), path);
        continue;
      }
      unknown_key(path, prefix, specs);
    }
  }

  /// An unknown key: lists the keys allowed at this level.
  void unknown_key(const std::string& path, const std::string& prefix,
                   const std::vector<const ParamSpec*>& specs) {
    std::set<std::string> keys;
    const std::string pre = prefix.empty() ? "" : prefix + ".";
    for (const auto& s : reg.all()) {
      if (s.path.compare(0, pre.size(), pre) != 0 || !applies(s)) continue;
      std::string rest = s.path.substr(pre.size());
      keys.insert(rest.substr(0, rest.find('.')));
    }
    std::string list;
    for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
    if (!specs.empty()) {
      // If the condition's own value is wrong, that one problem is reported; the keys that
      // depend on it cannot be judged.
      if (!condition_valid(specs[0]->when_path)) return;
      problems.add(path, "is not a parameter here (it applies only when " + specs[0]->when_path +
                             " is " + specs[0]->when_value + ")");
    } else {
      const std::string key = path.substr(pre.size());
      problems.add(path, "unknown key; allowed here: " + (list.empty() ? "(none)" : list) +
                             did_you_mean_suffix(key, {keys.begin(), keys.end()}));
    }
  }

  // Fill defaults; report missing required values. Not under a section given as something other
  // than an object: the walk reported that once ("hardware: expected an object"), and every
  // parameter under it would only repeat it.
  bool under_non_object(const std::string& path) const {
    for (auto dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1))
      if (const auto* v = json_at(doc, path.substr(0, dot)); v && !v->is_object()) return true;
    return false;
  }
  void fill_defaults() {
    for (const auto& s : reg.all()) {
      if (!applies(s) || json_at(doc, s.path) || under_non_object(s.path)) continue;
      if (s.default_value.is_null()) {
        problems.add(s.path, "is required: " + s.meaning + "; expected " + allowed_text(s));
        continue;
      }
      try {
        json_set(doc, s.path, s.default_value);
      } catch (const ConfigError& e) {
        for (const auto& p : e.problems()) problems.add(p.where, p.what);
      }
    }
  }
};

}  // namespace

void ParamRegistry::validate_and_fill(nlohmann::json& doc, ProblemList& problems) const {
  if (!doc.is_object()) {
    problems.add("(document)",
                 "a study must be a JSON object, got " + std::string(doc.type_name()));
    return;
  }
  ParamCheck check{*this, doc, problems};
  check.walk(doc, "");
  check.fill_defaults();
}

}  // namespace tpusim
