#include "tools/sweep/sweep_spec.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/limits.hpp"
#include "tools/sweep/columns.hpp"

namespace tpusim::sweep {
namespace {
namespace fs = std::filesystem;

std::string show(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

bool is_comment(const std::string& key) { return !key.empty() && key[0] == '_'; }

bool valid_name(const std::string& s) {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_.]*");
  return std::regex_match(s, re);
}

bool valid_path(const std::string& s) {
  static const std::regex re("[A-Za-z0-9_]+(\\.[A-Za-z0-9_]+)*");
  return std::regex_match(s, re);
}

/// Reports keys of `obj` outside `allowed` (comments excepted).
void check_keys(const nlohmann::json& obj, const std::string& where,
                const std::vector<std::string>& allowed, ProblemList& problems) {
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (is_comment(it.key())) continue;
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end())
      problems.add(where.empty() ? it.key() : where + "." + it.key(),
                   "unknown key; allowed here: " + list);
  }
}

/// Reads "path" and "name" of an axis object; returns false if neither is usable.
bool read_path_and_name(const nlohmann::json& obj, const std::string& where, std::string& path,
                        std::string& name, ProblemList& problems) {
  bool ok = true;
  if (auto p = obj.find("path"); p != obj.end()) {
    if (!p->is_string() || !valid_path(p->get<std::string>())) {
      problems.add(where + ".path", show(*p) +
                                        " is not a config path; expected dotted keys such as "
                                        "\"hardware.ici.bandwidth_GBps\"");
      ok = false;
    } else {
      path = p->get<std::string>();
    }
  }
  if (auto n = obj.find("name"); n != obj.end()) {
    if (!n->is_string() || !valid_name(n->get<std::string>())) {
      problems.add(
          where + ".name",
          show(*n) +
              " is not a name; expected letters, digits, '_' or '.', not starting with a digit");
      ok = false;
    } else {
      name = n->get<std::string>();
    }
  }
  if (ok && path.empty() && name.empty()) {
    problems.add(where,
                 "an axis needs a \"path\" (the config value it sets) or a \"name\" (a variable "
                 "for expressions), or both");
    ok = false;
  }
  if (name.empty()) name = path;
  return ok;
}

bool parse_value_axis(const nlohmann::json& obj, const std::string& where, ValueAxis& axis,
                      ProblemList& problems) {
  check_keys(obj, where, {"path", "name", "values"}, problems);
  axis.where = where;
  bool ok = read_path_and_name(obj, where, axis.path, axis.name, problems);
  auto v = obj.find("values");
  if (v == obj.end()) {
    problems.add(where, "missing \"values\" (a non-empty list)");
    return false;
  }
  if (!v->is_array() || v->empty()) {
    problems.add(where + ".values",
                 show(*v) + " is not allowed; expected a non-empty list of values");
    return false;
  }
  axis.values.assign(v->begin(), v->end());
  for (std::size_t i = 0; i < axis.values.size(); ++i)
    if (axis.values[i].is_null()) {
      problems.add(where + ".values[" + std::to_string(i) + "]", "null is not a value");
      ok = false;
    }
  return ok;
}

void parse_axes(const nlohmann::json& axes, SweepSpec& spec, ProblemList& problems) {
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::string where = "axes[" + std::to_string(i) + "]";
    const auto& a = axes[i];
    if (!a.is_object()) {
      problems.add(where, show(a) +
                              " is not an axis; expected an object with \"path\"/\"name\" and "
                              "\"values\" or \"expr\", or {\"zip\": [axes]}");
      continue;
    }
    if (a.contains("zip")) {
      check_keys(a, where, {"zip"}, problems);
      const auto& z = a["zip"];
      if (!z.is_array() || z.size() < 2) {
        problems.add(where + ".zip",
                     "expected a list of at least two axes with values, got " + show(z));
        continue;
      }
      AxisGroup group;
      bool ok = true;
      for (std::size_t k = 0; k < z.size(); ++k) {
        const std::string w = where + ".zip[" + std::to_string(k) + "]";
        if (!z[k].is_object() || z[k].contains("zip") || z[k].contains("expr")) {
          problems.add(w,
                       "a zipped axis must be an object with \"path\"/\"name\" and \"values\" (no "
                       "nested zip, no expr)");
          ok = false;
          continue;
        }
        ValueAxis axis;
        if (parse_value_axis(z[k], w, axis, problems))
          group.axes.push_back(std::move(axis));
        else
          ok = false;
      }
      if (!ok) continue;
      for (std::size_t k = 1; k < group.axes.size(); ++k)
        if (group.axes[k].values.size() != group.axes[0].values.size())
          problems.add(where + ".zip", "zipped axes must have equal lengths: zip[0] has " +
                                           std::to_string(group.axes[0].values.size()) +
                                           " values, zip[" + std::to_string(k) + "] has " +
                                           std::to_string(group.axes[k].values.size()));
      spec.groups.push_back(std::move(group));
      continue;
    }
    if (a.contains("expr")) {
      check_keys(a, where, {"path", "name", "expr"}, problems);
      DerivedAxis d;
      d.where = where;
      if (!read_path_and_name(a, where, d.path, d.name, problems)) continue;
      if (!a["expr"].is_string()) {
        problems.add(
            where + ".expr",
            show(a["expr"]) + " is not an expression; expected a string such as \"8 * cores\"");
        continue;
      }
      try {
        d.expr = Expr::parse(a["expr"].get<std::string>(), where + ".expr");
        spec.derived.push_back(std::move(d));
      } catch (const ConfigError& e) {
        for (const auto& p : e.problems()) problems.add(p.where, p.what);
      }
      continue;
    }
    ValueAxis axis;
    if (parse_value_axis(a, where, axis, problems))
      spec.groups.push_back(AxisGroup{{std::move(axis)}});
  }
}

/// Names and paths unique, names clear of fixed columns and built-ins, expression variables known.
void check_names(const SweepSpec& spec, ProblemList& problems) {
  std::set<std::string> names, paths;
  auto claim = [&](const std::string& name, const std::string& path, const std::string& where) {
    if (is_fixed_column(name))
      problems.add(
          where, "the name '" + name + "' is a results.csv column; give the axis another \"name\"");
    if (std::find(builtin_variables().begin(), builtin_variables().end(), name) !=
        builtin_variables().end())
      problems.add(where,
                   "the name '" + name +
                       "' is a built-in expression variable; give the axis another \"name\"");
    if (!names.insert(name).second)
      problems.add(where, "another axis is already named '" + name + "'; names must be unique");
    if (!path.empty() && !paths.insert(path).second)
      problems.add(where,
                   "another axis already sets " + path + "; each path may be swept by one axis");
  };
  for (const auto& g : spec.groups)
    for (const auto& a : g.axes) claim(a.name, a.path, a.where);
  std::set<std::string> known(builtin_variables().begin(), builtin_variables().end());
  for (const auto& g : spec.groups)
    for (const auto& a : g.axes) known.insert(a.name);
  for (const auto& d : spec.derived) {
    claim(d.name, d.path, d.where);
    for (const auto& v : d.expr.variables()) {
      if (known.count(v) && !(v == "base" && d.path.empty())) continue;
      std::string list;
      for (const auto& k : known)
        if (!(k == "base" && d.path.empty())) list += (list.empty() ? "" : ", ") + k;
      problems.add(d.where + ".expr", "unknown variable '" + v + "'; known here: " + list +
                                          (v == "base" ? " ('base' needs a path)" : ""));
    }
    known.insert(d.name);
  }
}

}  // namespace

std::vector<std::string> SweepSpec::column_names() const {
  std::vector<std::string> out;
  for (const auto& g : groups)
    for (const auto& a : g.axes) out.push_back(a.name);
  for (const auto& d : derived) out.push_back(d.name);
  return out;
}

std::vector<std::string> SweepSpec::series_axes() const {
  if (series_given) return series;
  std::vector<std::string> out;
  for (const auto& g : groups) {
    bool sets_topology = std::any_of(g.axes.begin(), g.axes.end(), [](const ValueAxis& a) {
      return a.path == "topology" || a.path.rfind("topology.", 0) == 0;
    });
    if (sets_topology) continue;
    for (const auto& a : g.axes) {
      bool scalar = std::all_of(a.values.begin(), a.values.end(),
                                [](const nlohmann::json& v) { return v.is_primitive(); });
      if (scalar) out.push_back(a.name);
    }
  }
  return out;
}

std::size_t SweepSpec::point_count() const {
  std::size_t n = 1;
  for (const auto& g : groups) n *= g.size();
  return n;
}

namespace {

/// "base": a study file (relative to the sweep file) or an inline study.
void parse_base(const nlohmann::json& doc, const std::string& dir, SweepSpec& spec,
                ProblemList& problems) {
  if (auto b = doc.find("base"); b == doc.end()) {
    problems.add(
        "base",
        "missing: the study every point starts from (a file path or an inline study object)");
  } else if (b->is_string()) {
    fs::path p = b->get<std::string>();
    if (p.is_relative()) p = fs::path(dir) / p;
    try {
      spec.base = read_json_file(p.string());
    } catch (const ConfigError& e) {
      problems.add("base", e.what());
    }
  } else if (b->is_object()) {
    spec.base = *b;
  } else {
    problems.add("base", show(*b) +
                             " is not allowed; expected a study file path (relative to the sweep "
                             "file) or an inline study object");
  }
}

/// "series": the axes whose values name a curve.
void parse_series(const nlohmann::json& doc, SweepSpec& spec, ProblemList& problems) {
  if (auto s = doc.find("series"); s != doc.end()) {
    if (!s->is_array()) {
      problems.add("series",
                   show(*s) + " is not allowed; expected a list of axis names ([]: by model only)");
    } else {
      spec.series_given = true;
      for (std::size_t i = 0; i < s->size(); ++i) {
        if (!(*s)[i].is_string()) {
          problems.add("series[" + std::to_string(i) + "]", show((*s)[i]) + " is not an axis name");
          continue;
        }
        spec.series.push_back((*s)[i].get<std::string>());
      }
    }
  }
}

}  // namespace

SweepSpec parse_sweep(const nlohmann::json& doc, const std::string& file, const std::string& dir) {
  ProblemList problems;
  SweepSpec spec;
  spec.file = file;
  if (!doc.is_object())
    throw ConfigError("(document)", "a sweep must be a JSON object with \"base\" and \"axes\"");
  check_keys(doc, "", {"base", "axes", "series", "command"}, problems);
  if (auto c = doc.find("command"); c != doc.end()) {
    if (c->is_string() && (*c == "run" || *c == "train" || *c == "serve"))
      spec.command = c->get<std::string>();
    else
      problems.add("command", show(*c) +
                                  " is not allowed; expected \"run\" (one step per point), "
                                  "\"train\" (time to train per point) or \"serve\" (a serve "
                                  "of the study's \"serving\" object per point)");
  }

  parse_base(doc, dir, spec, problems);

  if (auto a = doc.find("axes"); a == doc.end()) {
    problems.add("axes", "missing: a non-empty list of axes");
  } else if (!a->is_array() || a->empty()) {
    problems.add("axes", show(*a) + " is not allowed; expected a non-empty list of axes");
  } else {
    parse_axes(*a, spec, problems);
    if (spec.groups.empty() && problems.empty())
      problems.add("axes", "no axis has values; at least one axis must list \"values\"");
    // Checked before anything is expanded: the product of the axes' lengths, saturating.
    double points = 1;
    for (const auto& g : spec.groups) points *= static_cast<double>(g.size());
    if (points > static_cast<double>(kMaxSweepPoints))
      problems.add("axes", "the axes make " + format_number(points) + " points, " +
                               past_limit(static_cast<double>(kMaxSweepPoints), "points",
                                          "kMaxSweepPoints") +
                               "; split the sweep into several files");
  }

  parse_series(doc, spec, problems);
  if (problems.empty()) {
    check_names(spec, problems);
    auto cols = spec.column_names();
    for (const auto& s : spec.series)
      if (std::find(cols.begin(), cols.end(), s) == cols.end())
        problems.add("series", "'" + s + "' is not an axis name");
  }

  if (!problems.empty()) {
    std::vector<Problem> items = problems.items();
    if (!file.empty())
      for (auto& p : items) p.where = file + ": " + p.where;
    throw ConfigError(items);
  }
  return spec;
}

SweepSpec load_sweep_file(const std::string& path) {
  nlohmann::json doc = read_json_file(path);
  std::string dir = fs::path(path).parent_path().string();
  return parse_sweep(doc, path, dir.empty() ? "." : dir);
}

}  // namespace tpusim::sweep
