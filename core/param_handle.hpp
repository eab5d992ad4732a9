#pragma once
// Typed handles of declared parameters: declaring a parameter returns the handle its reader
// reads it with, so a path is written once, in its declaration.
//
//   const Param<std::int64_t> kLayers{{"workload.layers", ParamType::Integer, "", 24,
//                                      "encoder layers", 1, 1000, {}, "workload.model", "my_net"}};
//   ... const std::int64_t layers = kLayers(cfg); ...
//
// A key that every model declares once with its own default and meaning (workload.global_batch)
// is a ParamFamily: one handle for its readers, one declare() per model.
#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/params.hpp"

namespace tpusim {

namespace param_detail {
template <class T>
struct Read;
template <>
struct Read<std::int64_t> {
  static constexpr ParamType type = ParamType::Integer;
  static std::int64_t get(const Config& c, const std::string& p) { return c.integer(p); }
};
template <>
struct Read<double> {
  static constexpr ParamType type = ParamType::Number;
  static double get(const Config& c, const std::string& p) { return c.number(p); }
};
template <>
struct Read<bool> {
  static constexpr ParamType type = ParamType::Boolean;
  static bool get(const Config& c, const std::string& p) { return c.boolean(p); }
};
template <>
struct Read<std::string> {
  static constexpr ParamType type = ParamType::String;
  static std::string get(const Config& c, const std::string& p) { return c.string(p); }
};
template <>
struct Read<std::vector<std::int64_t>> {
  static constexpr ParamType type = ParamType::IntegerList;
  static std::vector<std::int64_t> get(const Config& c, const std::string& p) {
    return c.integers(p);
  }
};
template <>
struct Read<std::vector<bool>> {
  static constexpr ParamType type = ParamType::BooleanList;
  static std::vector<bool> get(const Config& c, const std::string& p) { return c.booleans(p); }
};
}  // namespace param_detail

/// The handle of one declared parameter of value type T (std::int64_t, double, bool,
/// std::string, std::vector<std::int64_t>, std::vector<bool>).
template <class T>
class Param {
 public:
  /// Declares `spec` in the global registry (ParamRegistry::declare); its type must be T's.
  Param(ParamSpec spec) : path_(spec.path) {  // NOLINT: a declaration reads as a table row
    assert(spec.type == param_detail::Read<T>::type && "Param<T> of another type");
    ParamRegistry::declare(std::move(spec));
  }
  /// The value in a validated study (defaults filled).
  T operator()(const Config& cfg) const { return param_detail::Read<T>::get(cfg, path_); }
  /// The value where the declaration applies in `cfg` (its condition holds), else nullopt.
  std::optional<T> if_applies(const Config& cfg) const {
    if (!cfg.has(path_)) return std::nullopt;
    return (*this)(cfg);
  }
  /// The dotted path, for messages.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// One key declared once per value of a condition parameter (workload.global_batch once per
/// model): the shared part here, each member's default and meaning by declare().
template <class T>
class ParamFamily {
 public:
  /// `shared`: path, type, unit, range and when_path; its default, meaning and when_value are
  /// each member's.
  explicit ParamFamily(ParamSpec shared) : shared_(std::move(shared)) {
    assert(shared_.type == param_detail::Read<T>::type && "ParamFamily<T> of another type");
  }
  /// Declares the key for `when_value` in the global registry.
  void declare(std::string when_value, nlohmann::json default_value, std::string meaning) const {
    ParamSpec s = shared_;
    s.when_value = std::move(when_value);
    s.default_value = std::move(default_value);
    s.meaning = std::move(meaning);
    ParamRegistry::declare(std::move(s));
  }
  T operator()(const Config& cfg) const { return param_detail::Read<T>::get(cfg, shared_.path); }
  /// The value where a member's declaration applies in `cfg`, else nullopt.
  std::optional<T> if_applies(const Config& cfg) const {
    if (!cfg.has(shared_.path)) return std::nullopt;
    return (*this)(cfg);
  }
  const std::string& path() const { return shared_.path; }

 private:
  ParamSpec shared_;
};

}  // namespace tpusim
