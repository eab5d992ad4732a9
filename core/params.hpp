#pragma once
// Parameters are declared once, where they are read, with type, unit, default and meaning.
// The declarations feed `tpusim params`, validation of studies and default filling.
//
//   const Param<double> kClockMHz{   // a typed handle (core/param_handle.hpp) that reads it
//     {"hardware.clock_MHz", ParamType::Number, "MHz", 940.0, "TensorCore clock", 1, 1e5}};
//   ... kClockMHz(cfg) ...
//
// A key is declared once per condition: a second declaration of a path whose condition overlaps
// (the same workload.model, or either without a condition) is refused when the registry is
// built, so `tpusim params PATH` lists one entry per model.
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/errors.hpp"

namespace tpusim {

/// Unbounded, for the min and max of a parameter table row.
inline constexpr double kInf = std::numeric_limits<double>::infinity();

enum class ParamType { Integer, Number, Boolean, String, IntegerList, BooleanList, NumberList };

const char* to_string(ParamType t);

struct ParamSpec {
  std::string path;  ///< dotted JSON path, e.g. "hardware.ici.bandwidth_GBps"
  ParamType type = ParamType::Number;
  std::string unit;              ///< "GB/s", "ns", "bytes", "" for counts and names
  nlohmann::json default_value;  ///< null: the parameter must be given
  std::string meaning;           ///< one line
  double min = -std::numeric_limits<double>::infinity();  ///< for numbers and list elements
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  ///< for strings: the allowed values (empty: any)
  std::string when_path;             ///< applies only when this parameter...
  std::string when_value;            ///< ...has this value (e.g. workload.model = bert_large)
  /// Names something for reports only; no result depends on it. Every other parameter must
  /// change some output of some study (tests/cli/test_param_effect.cpp).
  bool label = false;
  /// For strings: a registry's names, allowed besides `choices` (workload.model: the registered
  /// models), so that no list of names is written twice.
  std::vector<std::string> (*choices_from)() = nullptr;

  /// `choices` followed by the names of `choices_from`.
  std::vector<std::string> allowed_choices() const;
};

/// A string parameter that is a label (see ParamSpec::label).
ParamSpec label_param(std::string path, std::string default_value, std::string meaning);

/// Every declared parameter. The global one (instance()) is filled by Param handles and
/// ParamRegistrar objects during static initialisation and read-only afterwards; tests build
/// their own.
class ParamRegistry {
 public:
  static const ParamRegistry& instance();
  /// Declares `spec` in the global registry (what Param handles and ParamRegistrar call).
  static void declare(ParamSpec spec);

  /// Adds `spec`. A path declared already under an overlapping condition (the same when_path
  /// and when_value, or either unconditional) is a tpusim bug: refused with std::logic_error.
  void add(ParamSpec spec);
  const std::vector<ParamSpec>& all() const { return specs_; }
  /// Declarations for `path` (several when they differ by `when`).
  std::vector<const ParamSpec*> find(const std::string& path) const;
  /// True if `path` names an object that holds declared parameters (e.g. "hardware").
  bool is_section(const std::string& path) const;

  /// Checks `doc` against the declarations: unknown keys, wrong types, values out of range,
  /// values not among the choices, missing required values. Fills defaults in place.
  /// Every problem is added to `problems` with its JSON path.
  void validate_and_fill(nlohmann::json& doc, ProblemList& problems) const;

 private:
  static ParamRegistry& mutable_instance();
  std::vector<ParamSpec> specs_;
  /// specs_'s indices by path, and every path that holds declared parameters (a study is
  /// checked against the registry for each of its keys and defaults: thousands of lookups for
  /// each layout `tpusim plan` checks).
  std::unordered_map<std::string, std::vector<std::size_t>> by_path_;
  std::unordered_set<std::string> sections_;
};

struct ParamRegistrar {
  ParamRegistrar(std::initializer_list<ParamSpec> specs);
};

/// A string given where a section is expected (e.g. "topology": "128x32:wrap=0,1") is expanded
/// into the section's object form by the function registered for that path.
using Shorthand = nlohmann::json (*)(const std::string& text, const std::string& where);
/// Fills the keys an object form of the section leaves out from the keys it gives, as the
/// shorthand would (a topology's wrap from its dims), before the registry's defaults apply: the
/// defaults describe the default section, not one the study wrote.
using ShorthandCompletion = void (*)(nlohmann::json& object);
struct ShorthandRegistrar {
  ShorthandRegistrar(const char* path, Shorthand expand, ShorthandCompletion complete = nullptr);
};
/// Expands every registered shorthand present in `doc`, and completes their object forms.
void expand_shorthands(nlohmann::json& doc);

/// True if dotted `path` lies inside the section `section` ("parallelism.model" in "parallelism").
bool path_within(const std::string& path, const std::string& section);
/// Dotted-path access into a JSON document.
const nlohmann::json* json_at(const nlohmann::json& doc, const std::string& path);
/// Creates intermediate objects as needed. Throws ConfigError if a non-object is in the way.
void json_set(nlohmann::json& doc, const std::string& path, nlohmann::json value);

}  // namespace tpusim
