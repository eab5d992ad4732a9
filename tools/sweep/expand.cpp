#include "tools/sweep/expand.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/params.hpp"

namespace tpusim::sweep {
namespace {

/// A value given in the study or, failing that, the declared default that applies (a parameter
/// may be declared several times with different `when` conditions, e.g. a batch per model).
const nlohmann::json* value_or_default(const nlohmann::json& doc, const std::string& path,
                                       int depth = 0) {
  if (const auto* v = json_at(doc, path)) return v;
  if (depth > 4) return nullptr;
  for (const auto* s : ParamRegistry::instance().find(path)) {
    if (s->default_value.is_null()) continue;
    if (s->when_path.empty()) return &s->default_value;
    const auto* cond = value_or_default(doc, s->when_path, depth + 1);
    if (cond && cond->is_string() && cond->get<std::string>() == s->when_value)
      return &s->default_value;
  }
  return nullptr;
}

nlohmann::json resolved_copy(const nlohmann::json& study) {
  nlohmann::json doc = study;
  resolve_presets(doc);
  expand_shorthands(doc);
  resolve_presets(doc);
  return doc;
}

/// Integral results become JSON integers, so that integer parameters accept them.
nlohmann::json number_json(double v) {
  if (std::fabs(v) < 9.0e15 && std::fabs(v - std::round(v)) <= 1e-9 * std::max(1.0, std::fabs(v)))
    return static_cast<std::int64_t>(std::llround(v));
  return v;
}

/// Sets `path` as --set does (core/config: set_study_value); an empty path sets nothing.
void set_value(nlohmann::json& study, const std::string& path, const nlohmann::json& value) {
  if (!path.empty()) set_study_value(study, path, value);
}

}  // namespace

ChipCount count_chips(const nlohmann::json& study) {
  nlohmann::json doc = resolved_copy(study);
  const auto* dims = value_or_default(doc, "topology.dims");
  const auto* per_chip = value_or_default(doc, "hardware.cores_per_chip");
  if (!dims || !dims->is_array() || dims->empty())
    throw ConfigError("topology.dims", "cannot count chips: expected a list of positive integers");
  ChipCount c;
  c.chips = 1;
  for (const auto& d : *dims) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 1)
      throw ConfigError("topology.dims",
                        "cannot count chips: " + d.dump() + " is not a positive integer");
    c.chips *= d.get<std::int64_t>();
  }
  // Multislice: every slice's chips, as the reports count them.
  const auto* slices = value_or_default(doc, "topology.slices");
  if (slices && slices->is_number_integer() && slices->get<std::int64_t>() > 1)
    c.chips *= slices->get<std::int64_t>();
  if (!per_chip || !per_chip->is_number_integer() || per_chip->get<std::int64_t>() < 1)
    throw ConfigError("hardware.cores_per_chip", "cannot count cores: expected a positive integer");
  c.devices_per_chip = per_chip->get<std::int64_t>();
  // A megacore chip is one device: `cores` counts devices, as the report's `cores` does.
  const auto* megacore = value_or_default(doc, "hardware.megacore");
  if (megacore && megacore->is_boolean() && megacore->get<bool>()) c.devices_per_chip = 1;
  c.cores = c.chips * c.devices_per_chip;
  return c;
}

std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string point_label(const SweepSpec& spec, const SweepPoint& point) {
  std::string out;
  const auto names = spec.column_names();
  for (std::size_t i = 0; i < names.size() && i < point.values.size(); ++i)
    out += (out.empty() ? "" : " ") + names[i] + "=" + value_text(point.values[i]);
  return out;
}

void Fnv1a::bytes(const void* p, std::size_t n) {
  const auto* c = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    h_ ^= c[i];
    h_ *= 1099511628211ull;
  }
}

std::string Fnv1a::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
  return buf;
}

std::string study_id(const nlohmann::json& resolved) { return fnv1a_hex(resolved.dump()); }

std::string fnv1a_hex(const std::string& text) {
  Fnv1a h;
  h.bytes(text.data(), text.size());
  return h.hex();
}

std::vector<std::size_t> shard_indices(std::size_t n, int shard, int count) {
  std::vector<std::size_t> out;
  for (std::size_t i = static_cast<std::size_t>(shard - 1); i < n;
       i += static_cast<std::size_t>(count))
    out.push_back(i);
  return out;
}

nlohmann::json validate_with_core_loader(const nlohmann::json& study) {
  return load_config(study).json();
}

namespace {

/// The derived axes of point `p` (expressions of the axes' values and the chip counts); false,
/// with the problem, if one of them cannot be computed.
bool set_derived(const SweepSpec& spec, SweepPoint& p, std::map<std::string, double>& vars,
                 ProblemList& problems) {
  const std::size_t index = p.index;
  const std::string label = "point " + std::to_string(index);
  if (!spec.derived.empty()) {
    try {
      ChipCount c = count_chips(p.study);
      vars["chips"] = static_cast<double>(c.chips);
      vars["cores"] = static_cast<double>(c.cores);
      vars["cores_per_chip"] = static_cast<double>(c.devices_per_chip);
    } catch (const ConfigError&) {
      // Left out: an expression that reads chips reports it; load_config below names the cause.
    }
  }
  bool derived_ok = true;
  for (const auto& d : spec.derived) {
    try {
      vars.erase("base");
      if (!d.path.empty()) {
        const nlohmann::json resolved = resolved_copy(p.study);
        const auto* b = value_or_default(resolved, d.path);
        if (b && b->is_number()) vars["base"] = b->get<double>();
      }
      nlohmann::json v = number_json(d.expr.eval(vars, d.where + ".expr"));
      vars[d.name] = v.get<double>();
      p.values.push_back(v);
      set_value(p.study, d.path, v);
    } catch (const ConfigError& e) {
      for (const auto& pr : e.problems())
        problems.add(label + " [" + point_label(spec, p) + "]: " + pr.where, pr.what);
      derived_ok = false;
      break;
    }
  }
  return derived_ok;
}

/// "0-3, 7, 9-10" of sorted indices; past 8 ranges, "... and N more".
std::string index_ranges(const std::vector<std::size_t>& indices) {
  std::string out;
  std::size_t ranges = 0, i = 0;
  while (i < indices.size()) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (ranges == 8) {
      out += ", ... and " + std::to_string(indices.size() - i) + " more";
      break;
    }
    out += (ranges++ ? ", " : "") + std::to_string(indices[i]) +
           (j > i ? "-" + std::to_string(indices[j]) : "");
    i = j + 1;
  }
  return out;
}

/// Each point's study through `validate`: its resolved form and its id.
void validate_points(const SweepSpec& spec, std::vector<SweepPoint>& points,
                     const StudyValidator& validate, ProblemList& problems) {
  // A problem that every point has (usually one in the base study) is reported once; a problem
  // of some points is reported per point with its values.
  std::vector<std::pair<Problem, std::vector<const SweepPoint*>>> grouped;
  std::map<std::string, std::size_t> seen;
  for (auto& p : points) {
    try {
      p.resolved = validate(p.study);
      p.id = study_id(p.resolved);
      auto [it, fresh] = seen.emplace(p.id, p.index);
      if (!fresh)
        problems.add("point " + std::to_string(p.index) + " [" + point_label(spec, p) + "]",
                     "resolves to the same study as point " + std::to_string(it->second) +
                         "; an axis has no effect on the study");
    } catch (const ConfigError& e) {
      for (const auto& pr : e.problems()) {
        auto g = std::find_if(grouped.begin(), grouped.end(), [&](const auto& x) {
          return x.first.where == pr.where && x.first.what == pr.what;
        });
        if (g == grouped.end())
          grouped.push_back({pr, {&p}});
        else
          g->second.push_back(&p);
      }
    }
  }
  for (const auto& [pr, pts] : grouped) {
    if (pts.size() > 1 && pts.size() == points.size()) {
      problems.add("all " + std::to_string(pts.size()) + " points: " + pr.where, pr.what);
      continue;
    }
    if (pts.size() > 1) {  // one line for the points that share it, with the first as example
      std::vector<std::size_t> indices;
      for (const auto* p : pts) indices.push_back(p->index);
      problems.add(std::to_string(pts.size()) + " of " + std::to_string(points.size()) +
                       " points (" + index_ranges(indices) + "; e.g. [" +
                       point_label(spec, *pts.front()) + "]): " + pr.where,
                   pr.what);
      continue;
    }
    problems.add("point " + std::to_string(pts.front()->index) + " [" +
                     point_label(spec, *pts.front()) + "]: " + pr.where,
                 pr.what);
  }
}

}  // namespace

std::vector<SweepPoint> expand(const SweepSpec& spec, const std::vector<std::string>& sets,
                               const StudyValidator& validate) {
  nlohmann::json base = spec.base;
  for (const auto& s : sets) apply_set(base, s);

  std::vector<SweepPoint> points;
  ProblemList problems;
  std::set<std::string> axis_errors;
  std::vector<std::size_t> odometer(spec.groups.size(), 0);
  const std::size_t total = spec.point_count();
  for (std::size_t index = 0; index < total; ++index) {
    // Mixed-radix digits of `index`, the last group varying fastest.
    std::size_t rest = index;
    for (std::size_t g = spec.groups.size(); g-- > 0;) {
      odometer[g] = rest % spec.groups[g].size();
      rest /= spec.groups[g].size();
    }
    SweepPoint p;
    p.index = index;
    p.study = base;
    std::map<std::string, double> vars;
    for (std::size_t g = 0; g < spec.groups.size(); ++g) {
      for (const auto& axis : spec.groups[g].axes) {
        const auto& v = axis.values[odometer[g]];
        p.values.push_back(v);
        if (v.is_number()) vars[axis.name] = v.get<double>();
        try {
          set_value(p.study, axis.path, v);
        } catch (const ConfigError& e) {
          if (axis_errors.insert(axis.where + "\n" + e.what()).second)  // once, not per point
            problems.add(axis.where, e.what());
        }
      }
    }
    if (set_derived(spec, p, vars, problems)) points.push_back(std::move(p));
  }
  problems.throw_if_any();

  validate_points(spec, points, validate, problems);
  problems.throw_if_any();
  return points;
}

}  // namespace tpusim::sweep
