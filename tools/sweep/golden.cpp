#include "tools/sweep/golden.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/errors.hpp"
#include "tools/sweep/csv_table.hpp"
#include "tools/sweep/text_table.hpp"

namespace tpusim::sweep {
namespace {

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f%%", fraction * 100);
  return buf;
}

}  // namespace

std::string point_key(const CsvTable& t, std::size_t row, const std::vector<std::string>& cols) {
  std::string k;
  for (const auto& c : cols) k += (k.empty() ? "" : " ") + c + "=" + t.cell(row, c);
  return k;
}

std::map<std::string, std::size_t> rows_by_point(const CsvTable& t,
                                                 const std::vector<std::string>& cols) {
  std::map<std::string, std::size_t> rows;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string key = point_key(t, r, cols);
    auto [it, added] = rows.emplace(key, r);
    if (!added)
      throw ConfigError(t.where(r), "the point " + (key.empty() ? "(no swept columns)" : key) +
                                        " is also at " + t.where(it->second) +
                                        "; allowed: each point once");
  }
  return rows;
}

std::vector<std::string> swept_columns(const CsvTable& t) {
  std::vector<std::string> out;
  int from = t.column("status"), to = t.column("series");
  for (int i = from + 1; from >= 0 && i < to; ++i)
    out.push_back(t.header[static_cast<std::size_t>(i)]);
  return out;
}

double parse_tolerance(const std::string& text) {
  std::string s = text;
  bool pct = !s.empty() && s.back() == '%';
  if (pct) s.pop_back();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < 0 || (!pct && v >= 1))
    throw ConfigError("--tolerance " + text,
                      "expected a percentage such as 2% or a fraction below 1 such as 0.02");
  return pct ? v / 100 : v;
}

std::vector<Drift> compare_to_golden(const CsvTable& golden, const CsvTable& current,
                                     double tolerance) {
  std::vector<Drift> drifts;
  const auto cols = swept_columns(current);
  const auto golden_cols = swept_columns(golden);
  if (cols != golden_cols) {
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
      return s.empty() ? "(none)" : s;
    };
    drifts.push_back({"(all)", "columns", join(golden_cols), join(cols), "the swept axes differ"});
    return drifts;
  }
  const std::map<std::string, std::size_t> golden_rows = rows_by_point(golden, cols);
  rows_by_point(current, cols);
  std::map<std::string, bool> seen;
  for (std::size_t r = 0; r < current.rows.size(); ++r) {
    const std::string key = point_key(current, r, cols);
    seen[key] = true;
    auto g = golden_rows.find(key);
    const std::string status = current.cell(r, "status");
    if (g == golden_rows.end()) {
      drifts.push_back({key, "point", "(absent)", status, "extra point: not in the golden"});
      continue;
    }
    if (status != "ok" || golden.cell(g->second, "status") != "ok") {
      // "oom" is a value like any other: the same verdict in both is no drift.
      if (status != golden.cell(g->second, "status") || (status != "ok" && status != "oom"))
        drifts.push_back(
            {key, "status", golden.cell(g->second, "status"), status,
             current.cell(r, "error").empty() ? "point did not run" : current.cell(r, "error")});
      continue;
    }
    for (const char* metric : {"step_time_ms", "comm_share"}) {
      auto want = golden.number(g->second, metric);
      auto got = current.number(r, metric);
      if (want && got && (*want == *got || (std::isnan(*want) && std::isnan(*got)))) continue;
      if (!want || !got || std::isnan(*want) || std::isnan(*got)) {
        drifts.push_back(
            {key, metric, golden.cell(g->second, metric), current.cell(r, metric), "not a number"});
        continue;
      }
      // step time: relative; comm_share is already a fraction, so compare it absolutely.
      const bool relative = std::string(metric) == "step_time_ms";
      double diff =
          relative ? (*want != 0 ? (*got - *want) / std::fabs(*want) : (*got == 0 ? 0 : INFINITY))
                   : *got - *want;
      if (std::fabs(diff) > tolerance)
        drifts.push_back({key, metric, number_text(*want), number_text(*got),
                          relative ? percent(diff) : percent(diff) + " of step"});
    }
  }
  for (const auto& [key, row] : golden_rows)
    if (!seen.count(key))
      drifts.push_back({key, "point", golden.cell(row, "status"), "(absent)",
                        "missing point: in the golden, not in this sweep"});
  return drifts;
}

std::string drift_table(const std::vector<Drift>& drifts) {
  std::vector<std::vector<std::string>> rows{{"point", "metric", "expected", "got", "difference"}};
  for (const auto& d : drifts) rows.push_back({d.point, d.metric, d.expected, d.got, d.difference});
  return text_table(rows);
}

CsvTable golden_from_results(const CsvTable& results, const std::string& sweep_file,
                             const std::string& version) {
  CsvTable g = results;
  // wall_s changes with every run and machine; a golden keeps only what it guards and the keys.
  if (int c = g.column("wall_s"); c >= 0) {
    g.header.erase(g.header.begin() + c);
    for (auto& r : g.rows) r.erase(r.begin() + c);
  }
  g.comments = {"REGRESSION GOLDEN, not a measurement: tpusim " + version + "'s own results for " +
                    sweep_file + ".",
                "It guards the scaling curve against unintended change; `tpusim sweep " +
                    sweep_file + " --check THIS --update-golden` rewrites it on purpose.",
                "Checked: step_time_ms (relative) and comm_share (absolute), points matched by "
                "their swept values."};
  return g;
}

}  // namespace tpusim::sweep
