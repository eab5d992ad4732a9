#include "traces/format/json_field.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"
#include "core/limits.hpp"

namespace tpusim::trace {

std::string brief(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

namespace {
const char* type_name(const nlohmann::json& v) { return v.type_name(); }
}  // namespace

void JsonField::fail(const std::string& what) const { throw ConfigError(where(), what); }

std::string JsonField::child_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

JsonField JsonField::operator[](const std::string& key) const {
  if (!value_->is_object()) fail(std::string("is ") + type_name(*value_) + "; expected an object");
  auto it = value_->find(key);
  if (it == value_->end()) fail("missing required field '" + key + "'");
  return JsonField(*it, file_, child_path(key));
}

std::optional<JsonField> JsonField::optional(const std::string& key) const {
  if (!value_->is_object()) fail(std::string("is ") + type_name(*value_) + "; expected an object");
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonField(*it, file_, child_path(key));
}

JsonField JsonField::at(std::size_t i) const {
  return JsonField((*value_)[i], file_, path_ + "[" + std::to_string(i) + "]");
}

std::size_t JsonField::array_size() const {
  if (!value_->is_array()) fail(std::string("is ") + type_name(*value_) + "; expected an array");
  return value_->size();
}

void JsonField::only_keys(std::initializer_list<const char*> allowed) const {
  if (!value_->is_object()) fail(std::string("is ") + type_name(*value_) + "; expected an object");
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    const std::string& k = it.key();
    if (!k.empty() && k[0] == '_') continue;
    if (std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; }))
      continue;
    std::string list;  // the allowed keys, for the message only
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    fail("unknown field '" + k + "'; allowed: " + list + " (and comments starting with '_')");
  }
}

std::string JsonField::string_or_empty() const {
  if (!value_->is_string())
    fail(brief(*value_) + " is " + type_name(*value_) + "; expected a string");
  return value_->get<std::string>();
}

std::string JsonField::string() const {
  std::string s = string_or_empty();
  if (s.empty()) fail("is empty; expected a non-empty string");
  return s;
}

bool JsonField::boolean() const {
  if (!value_->is_boolean())
    fail(brief(*value_) + " is " + type_name(*value_) + "; expected true or false");
  return value_->get<bool>();
}

double JsonField::number() const {
  if (!value_->is_number())
    fail(brief(*value_) + " is " + type_name(*value_) + "; expected a number");
  double v = value_->get<double>();
  if (!std::isfinite(v)) fail(brief(*value_) + " is not finite; expected a finite number");
  return v;
}

double JsonField::non_negative(const char* what_kind) const {
  double v = number();
  if (v < 0) fail(brief(*value_) + " is negative; expected " + what_kind + " >= 0");
  return v;
}

double JsonField::bounded(const char* what_kind, double limit, const char* unit,
                          const char* limit_name) const {
  double v = non_negative(what_kind);
  if (v > limit) fail(brief(*value_) + " is " + past_limit(limit, unit, limit_name));
  return v;
}

std::int64_t JsonField::integer(std::int64_t lo, std::int64_t hi) const {
  const auto& v = *value_;
  const std::string range =
      "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (v.is_number_integer()) {
    // Unsigned values beyond int64 and signed values outside the range are both rejected.
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
      fail(brief(v) + " is out of range; expected " + range);
    std::int64_t i = v.get<std::int64_t>();
    if (i < lo || i > hi) fail(brief(v) + " is out of range; expected " + range);
    return i;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18 &&
        d >= static_cast<double>(lo) && d <= static_cast<double>(hi))
      return static_cast<std::int64_t>(d);
    fail(brief(v) + " is not " + range);
  }
  fail(brief(v) + " is " + type_name(v) + "; expected " + range);
}

}  // namespace tpusim::trace
