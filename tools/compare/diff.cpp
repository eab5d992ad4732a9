#include "tools/compare/diff.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/errors.hpp"
#include "tools/sweep/golden.hpp"

namespace tpusim::sweep {
namespace {

using Leaves = std::map<std::string, nlohmann::json>;

std::string join_path(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

/// The element's identity in a list: its "op" or "name" field, else its position.
std::string element_key(const nlohmann::json& e, std::size_t i) {
  for (const char* k : {"op", "name"})
    if (e.is_object() && e.contains(k) && e[k].is_string()) return e[k].get<std::string>();
  return std::to_string(i);
}

void flatten(const nlohmann::json& j, const std::string& prefix, Leaves& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      flatten(it.value(), join_path(prefix, it.key()), out);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i)
      flatten(j[i], prefix + "[" + element_key(j[i], i) + "]", out);
  } else {
    out[prefix] = j;
  }
}

std::string text_of(const nlohmann::json& v) {
  return v.is_string()   ? v.get<std::string>()
         : v.is_number() ? short_number(v.get<double>())
                         : v.dump();
}

/// Adds the comparison of one field to `d` (or its config-input difference to `inputs`).
void compare(const std::string& where, const nlohmann::json* a, const nlohmann::json* b, RunDiff& d,
             std::vector<OtherDiff>& others) {
  if (a && b && a->is_number() && b->is_number()) {
    const double x = a->get<double>(), y = b->get<double>();
    if (x == y || (std::isnan(x) && std::isnan(y)))
      ++d.equal;
    else if (std::isnan(x) || std::isnan(y))  // no relative difference: a mismatch outright
      others.push_back({where, short_number(x), short_number(y)});
    else
      d.numbers.push_back({where, x, y});
    return;
  }
  if (a && b && *a == *b) return;
  others.push_back({where, a ? text_of(*a) : "(absent)", b ? text_of(*b) : "(absent)"});
}

void sort_largest_first(std::vector<NumberDiff>& v) {
  std::stable_sort(v.begin(), v.end(), [](const NumberDiff& x, const NumberDiff& y) {
    const double rx = std::fabs(x.relative()), ry = std::fabs(y.relative());
    if (rx != ry) return rx > ry;
    return std::fabs(x.absolute()) > std::fabs(y.absolute());
  });
}

void require_report(const nlohmann::json& j, const std::string& name) {
  if (!j.is_object() || !j.contains("schema_version"))
    throw ConfigError(name,
                      "not a tpusim JSON report (no schema_version: `run`, `replay` and "
                      "`collective` write them with --json); diff compares two reports or two "
                      "results.csv files");
}

}  // namespace

double NumberDiff::relative() const {
  if (a == 0) return b == 0 ? 0.0 : std::copysign(INFINITY, b);
  return (b - a) / std::fabs(a);
}

std::size_t RunDiff::beyond(double tolerance) const {
  std::size_t n = results.size();
  for (const auto& x : numbers)
    if (std::fabs(x.relative()) > tolerance) ++n;
  return n;
}

std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

RunDiff diff_reports(const nlohmann::json& a, const nlohmann::json& b, const std::string& a_name,
                     const std::string& b_name) {
  require_report(a, a_name);
  require_report(b, b_name);
  RunDiff d;
  Leaves la, lb;
  flatten(a, "", la);
  flatten(b, "", lb);
  std::set<std::string> paths;
  for (const auto* l : {&la, &lb})
    for (const auto& [k, v] : *l) paths.insert(k);
  for (const auto& p : paths) {
    if (p == "wall_s" || p == "memory.analysis_s" || p == "simulate_wall_s")
      continue;  // wall-clock times (simulate_wall_s: tpusim serve's step simulations)
    const auto ia = la.find(p), ib = lb.find(p);
    const nlohmann::json* va = ia == la.end() ? nullptr : &ia->second;
    const nlohmann::json* vb = ib == lb.end() ? nullptr : &ib->second;
    if (p.rfind("config.", 0) == 0) {
      RunDiff ignored;
      compare(p.substr(7), va, vb, ignored, d.inputs);
      for (const auto& n : ignored.numbers)
        d.inputs.push_back({n.where, short_number(n.a), short_number(n.b)});
      continue;
    }
    compare(p, va, vb, d, d.results);
  }
  sort_largest_first(d.numbers);
  return d;
}

RunDiff diff_results(const CsvTable& a, const CsvTable& b) {
  RunDiff d;
  const auto cols_a = swept_columns(a), cols_b = swept_columns(b);
  const bool by_values = a.column("status") >= 0 && a.column("series") >= 0 &&
                         b.column("status") >= 0 && b.column("series") >= 0 && cols_a == cols_b;
  auto key = [&](const CsvTable& t, std::size_t r) {
    return by_values ? point_key(t, r, cols_a) : "row " + std::to_string(r + 1);
  };
  std::map<std::string, std::size_t> rows_b;
  if (by_values) {  // a point twice in either table: refused, neither copy wins
    rows_by_point(a, cols_a);
    rows_b = rows_by_point(b, cols_b);
  } else {
    for (std::size_t r = 0; r < b.rows.size(); ++r) rows_b[key(b, r)] = r;
  }
  std::set<std::string> seen;
  std::vector<std::string> columns;  // A's columns, then those only B has
  for (const auto* t : {&a, &b})
    for (const auto& c : t->header)
      if (std::find(columns.begin(), columns.end(), c) == columns.end()) columns.push_back(c);
  const std::set<std::string> skipped{"point", "id", "wall_s"};
  for (std::size_t r = 0; r < a.rows.size(); ++r) {
    const std::string k = key(a, r);
    seen.insert(k);
    auto other = rows_b.find(k);
    if (other == rows_b.end()) {
      d.results.push_back(
          {k, a.cell(r, "status").empty() ? "present" : a.cell(r, "status"), "(absent)"});
      continue;
    }
    for (const auto& c : columns) {
      if (skipped.count(c) ||
          (by_values && std::find(cols_a.begin(), cols_a.end(), c) != cols_a.end()))
        continue;
      const bool in_a = a.column(c) >= 0, in_b = b.column(c) >= 0;
      const std::string where = by_values && k.empty() ? c : k + " " + c;
      const auto na = a.number(r, c), nb = b.number(other->second, c);
      if (na && nb) {
        nlohmann::json x = *na, y = *nb;
        compare(where, &x, &y, d, d.results);
        continue;
      }
      nlohmann::json x = a.cell(r, c), y = b.cell(other->second, c);
      compare(where, in_a ? &x : nullptr, in_b ? &y : nullptr, d, d.results);
    }
  }
  for (const auto& [k, r] : rows_b)
    if (!seen.count(k))
      d.results.push_back(
          {k, "(absent)", b.cell(r, "status").empty() ? "present" : b.cell(r, "status")});
  sort_largest_first(d.numbers);
  return d;
}

}  // namespace tpusim::sweep
