#include "traces/profile/profile_events.hpp"

#include <cmath>
#include <cstdlib>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "traces/format/json_field.hpp"

namespace tpusim::trace {

std::string event_where(const std::string& file, const SpanEvent& e, const std::string& arg_key) {
  std::string w = file + ": traceEvents[" + std::to_string(e.index) + "]";
  return arg_key.empty() ? w + " (" + e.name + ")" : w + ".args." + arg_key;
}

std::optional<double> arg_non_negative(const std::string& file, const SpanEvent& e,
                                       const char* key) {
  if (!e.args) return std::nullopt;
  auto it = e.args->find(key);
  if (it == e.args->end()) return std::nullopt;
  double v = 0;
  if (it->is_number()) {
    v = it->get<double>();
  } else if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    char* end = nullptr;
    v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0')
      throw ConfigError(event_where(file, e, key), brief(*it) + " is not a number");
  } else {
    throw ConfigError(event_where(file, e, key),
                      brief(*it) + " is " + it->type_name() + "; expected a number");
  }
  if (!std::isfinite(v))
    throw ConfigError(event_where(file, e, key), brief(*it) + " is not finite");
  if (v < 0)
    throw ConfigError(event_where(file, e, key),
                      brief(*it) + " is negative; expected a value >= 0");
  const bool flops = std::string(key) == "flops";  // every other numeric arg is a size in bytes
  const double limit = flops ? kMaxOpFlops : kMaxBytes;
  if (v > limit)
    throw ConfigError(
        event_where(file, e, key),
        brief(*it) + " is " +
            past_limit(limit, flops ? "FLOPs" : "bytes", flops ? "kMaxOpFlops" : "kMaxBytes"));
  return v;
}

std::optional<std::string> arg_string(const std::string& file, const SpanEvent& e,
                                      const char* key) {
  if (!e.args) return std::nullopt;
  auto it = e.args->find(key);
  if (it == e.args->end()) return std::nullopt;
  if (!it->is_string())
    throw ConfigError(event_where(file, e, key),
                      brief(*it) + " is " + it->type_name() + "; expected a string");
  return it->get<std::string>();
}

std::optional<std::vector<ArrayShape>> event_result_shape(const std::string& file,
                                                          const SpanEvent& e) {
  for (const char* key : {"shape", "shape_with_layout"})
    if (auto s = arg_string(file, e, key)) return parse_hlo_shapes(*s);
  if (auto long_name = arg_string(file, e, "long_name")) {
    const std::string text = hlo_result_shape_text(*long_name);
    if (!text.empty()) return parse_hlo_shapes(text);
  }
  return std::nullopt;
}

std::optional<std::string> event_hlo_attribute(const std::string& file, const SpanEvent& e,
                                               const std::string& attr) {
  if (auto direct = arg_string(file, e, attr.c_str())) return *direct;
  if (auto long_name = arg_string(file, e, "long_name")) return hlo_attribute(*long_name, attr);
  return std::nullopt;
}

}  // namespace tpusim::trace
