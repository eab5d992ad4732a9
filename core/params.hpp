#pragma once
// Parameters are declared once, where they are read, with type, unit, default and meaning.
// The declarations feed `tpusim params`, validation of studies and default filling.
//
//   static const ParamRegistrar kHardwareParams{{   // named after its file (unity builds)
//     {"hardware.clock_MHz", ParamType::Number, "MHz", 940.0, "TensorCore clock", 1, 1e5},
//   }};
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
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
};

/// A string parameter that is a label (see ParamSpec::label).
ParamSpec label_param(std::string path, std::string default_value, std::string meaning);

/// Every declared parameter. Filled by ParamRegistrar objects during static initialisation and
/// read-only afterwards.
class ParamRegistry {
 public:
  static const ParamRegistry& instance();
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
  friend struct ParamRegistrar;
  static ParamRegistry& mutable_instance();
  std::vector<ParamSpec> specs_;
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
