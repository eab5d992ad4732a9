#pragma once
// Text for people: counts with the right noun form and durations in a fitting unit.
#include <cmath>
#include <cstdio>
#include <string>

namespace tpusim::cli {

/// "1 op", "19 ops", "0 points": `singular` plus "s" unless the count is one (`plural` when
/// the noun is irregular, e.g. "series").
inline std::string count_of(long long n, const std::string& singular, std::string plural = "") {
  if (plural.empty()) plural = singular + "s";
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

/// "850 ns", "12.5 us", "0.169 ms" stays "169 us", "45.4 ms", "2.31 s": three significant
/// digits in the largest unit the value reaches.
inline std::string readable_duration_ms(double ms) {
  const double ns = ms * 1e6;
  struct Unit {
    const char* name;
    double ns;
  };
  constexpr Unit kUnits[] = {{"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}};
  for (const auto& u : kUnits)
    if (std::fabs(ns) >= u.ns || u.ns == 1) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "%.3g %s", ns / u.ns, u.name);
      return buf;
    }
  return "";
}

}  // namespace tpusim::cli
