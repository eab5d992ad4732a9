#include "tools/compare/compare_runs.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "tools/compare/diff.hpp"
#include "tools/sweep/golden.hpp"
#include "tools/sweep/readable.hpp"
#include "tools/sweep/text_table.hpp"

namespace tpusim::cli {
namespace {

bool is_csv(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
}

std::string percent_text(double fraction) {
  if (std::isinf(fraction)) return fraction > 0 ? "+inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f%%", 100 * fraction);
  return buf;
}

std::string signed_number(double v) { return (v > 0 ? "+" : "") + sweep::short_number(v); }

nlohmann::json to_json(const sweep::RunDiff& d, const DiffArgs& a, double tolerance) {
  nlohmann::json numbers = nlohmann::json::array();
  for (const auto& n : d.numbers) {
    const double rel = n.relative();
    numbers.push_back({{"where", n.where},
                       {"a", n.a},
                       {"b", n.b},
                       {"absolute", n.absolute()},
                       {"relative", std::isfinite(rel) ? nlohmann::json(rel) : nlohmann::json()}});
  }
  auto others = [](const std::vector<sweep::OtherDiff>& v) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& o : v) out.push_back({{"where", o.where}, {"a", o.a}, {"b", o.b}});
    return out;
  };
  nlohmann::json j{{"a", a.a},
                   {"b", a.b},
                   {"numbers", numbers},
                   {"equal", d.equal},
                   {"results", others(d.results)},
                   {"inputs", others(d.inputs)}};
  if (tolerance >= 0) {
    j["tolerance"] = tolerance;
    j["beyond_tolerance"] = d.beyond(tolerance);
  }
  return j;
}

void print_text(const sweep::RunDiff& d, const DiffArgs& a) {
  std::cout << "A: " << a.a << "\nB: " << a.b << "\n";
  if (!d.inputs.empty()) {
    std::cout << "inputs that differ ("
              << count_of(static_cast<long long>(d.inputs.size()), "field")
              << " of the embedded config):\n";
    std::vector<std::vector<std::string>> rows{{"  config", "A", "B"}};
    for (const auto& o : d.inputs) rows.push_back({"  " + o.where, o.a, o.b});
    std::cout << sweep::text_table(rows);
  }
  if (!d.results.empty()) {
    std::cout << "results that are not numbers in both, or only in one:\n";
    std::vector<std::vector<std::string>> rows{{"  field", "A", "B"}};
    for (const auto& o : d.results) rows.push_back({"  " + o.where, o.a, o.b});
    std::cout << sweep::text_table(rows);
  }
  std::cout << count_of(static_cast<long long>(d.numbers.size()), "number")
            << (d.numbers.size() == 1 ? " differs, " : " differ, ") << d.equal << " equal"
            << (d.numbers.empty() ? "\n" : "; largest relative difference first:\n");
  if (d.numbers.empty()) return;
  std::vector<std::vector<std::string>> rows{{"  field", "A", "B", "B - A", "relative"}};
  for (const auto& n : d.numbers)
    rows.push_back({"  " + n.where, sweep::short_number(n.a), sweep::short_number(n.b),
                    signed_number(n.absolute()), percent_text(n.relative())});
  std::cout << sweep::text_table(rows, {1, 2, 3, 4});
}

}  // namespace

int run_diff(const DiffArgs& a) {
  const double tolerance =
      a.tolerance.empty() && !a.tolerance_given ? -1 : sweep::parse_tolerance(a.tolerance);
  if (is_csv(a.a) != is_csv(a.b))
    throw ConfigError(a.b, "is a " + std::string(is_csv(a.b) ? "CSV" : "JSON") + " file but " +
                               a.a + " is not; diff compares two reports or two results.csv files");
  const sweep::RunDiff d =
      is_csv(a.a) ? sweep::diff_results(sweep::read_csv(a.a), sweep::read_csv(a.b))
                  : sweep::diff_reports(read_json_file(a.a), read_json_file(a.b), a.a, a.b);
  if (a.json)
    std::cout << to_json(d, a, tolerance).dump(2) << "\n";
  else
    print_text(d, a);
  if (tolerance < 0) return 0;
  const std::size_t beyond = d.beyond(tolerance);
  if (beyond > 0) {
    std::cerr << "tpusim diff: " << count_of(static_cast<long long>(beyond), "difference")
              << " beyond the tolerance of " << percent_text(tolerance).substr(1) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tpusim::cli
