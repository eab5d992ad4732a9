// tpusim diff A B: two reports (JSON) or two results.csv files side by side.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "tools/lib/commands.hpp"
#include "tools/lib/readable.hpp"
#include "tools/sweep/diff.hpp"
#include "tools/sweep/golden.hpp"
#include "tools/sweep/text_table.hpp"

namespace tpusim::cli {
namespace {

struct DiffArgs {
  std::string a, b, tolerance;
  bool json = false;
};

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

void run_diff(const DiffArgs& a) {
  const double tolerance = a.tolerance.empty() ? -1 : sweep::parse_tolerance(a.tolerance);
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
  if (tolerance < 0) return;
  const std::size_t beyond = d.beyond(tolerance);
  if (beyond > 0) {
    std::cerr << "tpusim diff: " << count_of(static_cast<long long>(beyond), "difference")
              << " beyond the tolerance of " << percent_text(tolerance).substr(1) << "\n";
    set_exit_code(1);
  }
}

const CommandRegistrar kRegister{[](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "diff", "Compare two reports (tpusim run --json) or two results.csv files side by side");
  auto a = std::make_shared<DiffArgs>();
  cmd->add_option("A", a->a, "first report (.json) or results table (.csv)")->required();
  cmd->add_option("B", a->b, "second one, of the same kind")->required();
  cmd->add_option("--tolerance", a->tolerance,
                  "exit code 1 if a number differs by more than this relative to A (e.g. 1% or "
                  "0.01), or a field or point is only in one run");
  cmd->add_flag("--json", a->json, "print the comparison as one JSON object");
  cmd->callback([a] { run_diff(*a); });
}};

}  // namespace
}  // namespace tpusim::cli
