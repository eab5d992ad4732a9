#pragma once
// Typed, checked access to a field of a parsed JSON document that knows where it is, so every
// error names the file and the JSON path: "trace.json: ops[12].collective.bytes: -4 is negative;
// expected a size >= 0".
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tpusim::trace {

class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string file, std::string path)
      : value_(&value), file_(std::move(file)), path_(std::move(path)) {}

  const nlohmann::json& json() const { return *value_; }
  const std::string& path() const { return path_; }
  /// "file: path" (or just the file at the document root).
  std::string where() const { return path_.empty() ? file_ : file_ + ": " + path_; }
  /// Throws ConfigError at this field.
  [[noreturn]] void fail(const std::string& what) const;

  bool is_object() const { return value_->is_object(); }
  bool is_array() const { return value_->is_array(); }
  bool has(const std::string& key) const { return value_->is_object() && value_->contains(key); }

  /// A required member of an object (error if this is not an object or the key is missing).
  JsonField operator[](const std::string& key) const;
  /// An optional member (nullopt if missing; error if this is not an object).
  std::optional<JsonField> optional(const std::string& key) const;
  /// Element i of an array.
  JsonField at(std::size_t i) const;
  /// Number of elements of an array (error if not an array).
  std::size_t array_size() const;
  /// Errors if this object has a key outside `allowed` (keys starting with '_' are comments).
  void only_keys(std::initializer_list<const char*> allowed) const;

  std::string string() const;           ///< a non-empty string
  std::string string_or_empty() const;  ///< any string
  bool boolean() const;
  double number() const;                                        ///< a finite number
  double non_negative(const char* what_kind = "a size") const;  ///< finite, >= 0
  /// Finite, >= 0 and at most `limit` (a named limit of core/limits.hpp, `limit_name`), so that
  /// what the model computes from it stays representable.
  double bounded(const char* what_kind, double limit, const char* unit,
                 const char* limit_name) const;
  /// An integer in [lo, hi].
  std::int64_t integer(std::int64_t lo, std::int64_t hi) const;

 private:
  std::string child_path(const std::string& key) const;
  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
};

/// A short rendering of a JSON value for messages (long values are cut).
std::string brief(const nlohmann::json& v);

}  // namespace tpusim::trace
