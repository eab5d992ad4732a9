#include "tools/report/param_list.hpp"

#include <cmath>
#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/params.hpp"
#include "models/memory/memory_classes.hpp"

namespace tpusim::cli {
namespace {

bool integer_typed(ParamType t) { return t == ParamType::Integer || t == ParamType::IntegerList; }

/// A number that holds a whole value as an integer (256, not 256.0), recursively in lists.
nlohmann::json whole_numbers_as_integers(const nlohmann::json& v) {
  if (v.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : v) out.push_back(whole_numbers_as_integers(e));
    return out;
  }
  if (v.is_number_float() && std::isfinite(v.get<double>()) && std::fabs(v.get<double>()) < 9e15 &&
      std::trunc(v.get<double>()) == v.get<double>())
    return static_cast<std::int64_t>(v.get<double>());
  return v;
}

/// The default as shown: integers (and whole-valued numbers) without a fraction.
nlohmann::json shown_default(const ParamSpec& s) {
  return s.default_value.is_null() ? s.default_value : whole_numbers_as_integers(s.default_value);
}

std::string bound_text(double v, bool integer) {
  return whole_numbers_as_integers(integer ? std::round(v) : v).dump();
}

/// "range 1 to 100000", "at least 0", "at most 1", or "" when unbounded.
std::string range_text(const ParamSpec& s) {
  const bool lo = std::isfinite(s.min), hi = std::isfinite(s.max);
  const bool integer = integer_typed(s.type);
  if (lo && hi) return "range " + bound_text(s.min, integer) + " to " + bound_text(s.max, integer);
  if (lo) return "at least " + bound_text(s.min, integer);
  if (hi) return "at most " + bound_text(s.max, integer);
  return "";
}

bool numeric(ParamType t) {
  return t != ParamType::Boolean && t != ParamType::String && t != ParamType::BooleanList;
}

// The classes of the memory report: name, dtype, lifetime and source (docs/memory.md).

}  // namespace

void list_memory_classes(bool as_json) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : memory_classes()) {
    if (as_json) {
      out.push_back({{"class", to_string(c.cls)},
                     {"dtype", c.dtype},
                     {"lives", c.lives},
                     {"source", c.source}});
      continue;
    }
    std::cout << to_string(c.cls) << "  " << c.dtype << ", lives " << c.lives << "\n    "
              << c.source << "\n";
  }
  if (as_json) std::cout << out.dump(2) << "\n";
}

void run_params(bool as_json, const std::string& filter) {
  const auto& specs = ParamRegistry::instance().all();
  nlohmann::json out = nlohmann::json::array();
  std::size_t matched = 0;
  for (const auto& s : specs) {
    if (!filter.empty() && s.path.find(filter) == std::string::npos) continue;
    ++matched;
    const std::string range = numeric(s.type) ? range_text(s) : "";
    const std::vector<std::string> allowed = s.allowed_choices();  // the registry's, where named
    if (as_json) {
      nlohmann::json j{{"path", s.path},
                       {"type", to_string(s.type)},
                       {"unit", s.unit},
                       {"default", shown_default(s)},
                       {"meaning", s.meaning}};
      if (numeric(s.type) && std::isfinite(s.min)) j["min"] = whole_numbers_as_integers(s.min);
      if (numeric(s.type) && std::isfinite(s.max)) j["max"] = whole_numbers_as_integers(s.max);
      if (!allowed.empty()) j["choices"] = allowed;
      if (!s.when_path.empty()) j["when"] = s.when_path + "=" + s.when_value;
      if (s.label) j["label"] = true;
      out.push_back(j);
      continue;
    }
    std::string when =
        s.when_path.empty() ? "" : "  [when " + s.when_path + "=" + s.when_value + "]";
    if (s.label) when += "  [label: for reports only]";
    std::string choices;
    for (const auto& c : allowed) choices += (choices.empty() ? " (one of " : ", ") + c;
    if (!choices.empty()) choices += ")";
    std::cout << s.path << "  " << to_string(s.type) << (s.unit.empty() ? "" : ", " + s.unit)
              << "  default "
              << (s.default_value.is_null() ? "(required)" : shown_default(s).dump())
              << (range.empty() ? "" : ", " + range) << when << "\n    " << s.meaning << choices
              << "\n";
  }
  if (matched == 0)
    throw ConfigError("params " + filter,
                      "no parameter path contains this text (`tpusim params` lists them all)");
  if (as_json) std::cout << out.dump(2) << "\n";
}

}  // namespace tpusim::cli
