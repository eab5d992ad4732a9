#include "core/units.hpp"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "core/errors.hpp"
#include "core/limits.hpp"

namespace tpusim {

ByteCount parse_bytes(const std::string& text, const std::string& where) {
  static const std::pair<const char*, double> kSuffixes[] = {
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
      {"B", 1.0},      {"", 1.0}};
  const char* begin = text.c_str();
  char* end = nullptr;
  double value = std::strtod(begin, &end);
  const std::string allowed =
      "a positive size such as 4096, 64KiB, 64MiB, 1GB (KB/MB/GB are 10^3/10^6/10^9, KiB/MiB/GiB "
      "are 2^10/2^20/2^30)";
  if (end == begin) throw ConfigError(where, "'" + text + "' is not a size; expected " + allowed);
  std::string suffix(end);
  while (!suffix.empty() && suffix.front() == ' ') suffix.erase(suffix.begin());
  for (const auto& [name, scale] : kSuffixes) {
    if (suffix == name) {
      double bytes = value * scale;
      if (!(bytes >= 1.0) || !std::isfinite(bytes))
        throw ConfigError(where, "'" + text + "' is not a usable size; expected " + allowed);
      if (bytes > kMaxBytes)
        throw ConfigError(where,
                          "'" + text + "' is " + past_limit(kMaxBytes, "bytes", "kMaxBytes"));
      return static_cast<ByteCount>(std::llround(bytes));
    }
  }
  throw ConfigError(where,
                    "'" + text + "' has an unknown unit '" + suffix + "'; expected " + allowed);
}

std::string format_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.3g %s", bytes, kUnits[u]);
  return buf;
}

std::string format_number(double v) {
  char buf[32];
  // Whole numbers up to 10^9 in full (2097152, not 2.09715e+06); others in 6 digits.
  if (std::fabs(v) < 1e9 && v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string past_limit(double limit, const std::string& unit, const char* name) {
  return "past the limit of " + format_number(limit) + (unit.empty() ? "" : " " + unit) + " (" +
         name + ", docs/limits.md)";
}

}  // namespace tpusim
