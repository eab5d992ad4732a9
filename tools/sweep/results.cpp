#include "tools/sweep/results.hpp"

#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "tools/sweep/columns.hpp"
#include "tools/sweep/expand.hpp"

namespace tpusim::sweep {
namespace fs = std::filesystem;

nlohmann::json Plan::to_json() const {
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& p : points)
    pts.push_back({{"index", p.index}, {"id", p.id}, {"values", p.values}});
  return {{"schema_version", 1}, {"sweep_file", sweep_file},
          {"columns", columns},  {"series_axes", series_axes},
          {"shard", shard},      {"shard_count", shard_count},
          {"sets", sets},        {"command", command},
          {"points", pts}};
}

Plan Plan::from_json(const nlohmann::json& j, const std::string& where) {
  try {
    Plan p;
    p.sweep_file = j.at("sweep_file").get<std::string>();
    p.columns = j.at("columns").get<std::vector<std::string>>();
    p.series_axes = j.at("series_axes").get<std::vector<std::string>>();
    p.shard = j.at("shard").get<int>();
    p.shard_count = j.at("shard_count").get<int>();
    p.sets = j.value("sets", std::vector<std::string>{});  // absent in plans of older builds
    p.command = j.value("command", std::string("run"));    // so is this
    for (const auto& q : j.at("points")) {
      PlanPoint pp{q.at("index").get<std::size_t>(), q.at("id").get<std::string>(),
                   q.at("values").get<std::vector<nlohmann::json>>()};
      if (pp.values.size() != p.columns.size())
        throw std::runtime_error("values and columns differ in length");
      p.points.push_back(std::move(pp));
    }
    return p;
  } catch (const std::exception& e) {
    throw ConfigError(where,
                      std::string("not a sweep plan written by tpusim sweep (") + e.what() + ")");
  }
}

std::vector<std::size_t> Plan::own_indices() const {
  return shard_indices(points.size(), shard, shard_count);
}

std::string Plan::points_digest() const {
  std::string all;
  for (const auto& p : points) all += p.id + ",";
  return fnv1a_hex(all);
}

std::string point_file(const std::string& dir, const std::string& id) {
  return dir + "/points/" + id + ".json";
}
std::string error_file(const std::string& dir, const std::string& id) {
  return dir + "/points/" + id + ".error.json";
}
std::string study_file(const std::string& dir, const std::string& id) {
  return dir + "/points/" + id + ".study.json";
}
std::string program_file(const std::string& dir, const std::string& id) {
  return dir + "/points/" + id + ".program";
}

const char* to_string(PointState s) {
  switch (s) {
    case PointState::Ok:
      return "ok";
    case PointState::Oom:
      return "oom";
    case PointState::Failed:
      return "failed";
    case PointState::Pending:
      return "pending";
  }
  return "?";
}

PointOutcome read_outcome(const std::string& dir, const std::string& id) {
  PointOutcome o;
  try {
    if (fs::exists(point_file(dir, id))) {
      auto j = read_json_file(point_file(dir, id));
      const nlohmann::json* r = j.contains("report") ? &j["report"] : nullptr;
      if (r && r->value("out_of_memory", false) && check_oom_report(*r).empty() &&
          !r->contains("step_time_ms")) {
        o.state = PointState::Oom;
        o.report = *r;
        return o;
      }
      if (r && check_report(*r).empty()) {
        o.state = PointState::Ok;
        o.report = *r;
        return o;
      }
    }
    if (fs::exists(error_file(dir, id))) {
      auto j = read_json_file(error_file(dir, id));
      o.state = PointState::Failed;
      o.error = j.value("error", std::string("(no message)"));
    }
  } catch (const ConfigError&) {
    // A damaged file counts as not run: the point is run again.
  }
  return o;
}

nlohmann::json sweep_point_json(const Plan& plan, const PlanPoint& p) {
  nlohmann::json values = nlohmann::json::object();
  for (std::size_t i = 0; i < plan.columns.size(); ++i) values[plan.columns[i]] = p.values[i];
  return {{"index", p.index}, {"id", p.id}, {"values", values}};
}

namespace {

// "" or "the report lacks or mistypes: a, b" for the numbers and strings a report must hold.
std::string check_fields(const nlohmann::json& report, const std::vector<std::string>& numbers,
                         const std::vector<std::string>& strings, bool non_negative = true) {
  if (!report.is_object()) return "the report is not a JSON object";
  std::string missing;
  // Every number a row takes (times, shares, rates, counts) is finite and not negative: a point
  // file that says otherwise is damaged, whoever wrote it, and is not a result.
  auto need = [&](const std::string& key, bool number) {
    auto it = report.find(key);
    if (it == report.end() || (number ? !it->is_number() : !it->is_string()) ||
        (number && (!std::isfinite(it->get<double>()) || (non_negative && it->get<double>() < 0))))
      missing += (missing.empty() ? "" : ", ") + key;
  };
  for (const auto& k : numbers) need(k, true);
  for (const auto& k : strings) need(k, false);
  return missing.empty() ? "" : "the report lacks, mistypes or has a negative: " + missing;
}

// Peak and headroom in GiB from a report's memory object; empty cells without one.
void memory_cells(const nlohmann::json& report, std::map<std::string, std::string>& cell) {
  const auto m = report.find("memory");
  if (m == report.end() || !m->is_object() || !m->value("known", false)) return;
  constexpr double kGiB = 1073741824.0;
  if (m->contains("peak_bytes") && (*m)["peak_bytes"].is_number())
    cell["peak_memory_GiB"] = number_text((*m)["peak_bytes"].get<double>() / kGiB);
  if (m->contains("headroom_bytes") && (*m)["headroom_bytes"].is_number())
    cell["memory_headroom_GiB"] = number_text((*m)["headroom_bytes"].get<double>() / kGiB);
}

}  // namespace

void serve_cells(const nlohmann::json& r, std::map<std::string, std::string>& cell) {
  const auto& m = r.at("metrics");
  for (const char* what : {"ttft_ms", "tpot_ms"})
    for (const char* p : {"mean", "p50", "p90", "p99"})
      cell[std::string(what) + "_" + p] = number_text(m.at(what).at(p).get<double>());
  for (const char* p : {"p50", "p99"})
    cell[std::string("e2e_ms_") + p] = number_text(m.at("e2e_ms").at(p).get<double>());
  for (const char* c : {"requests_per_s", "input_tokens_per_s", "output_tokens_per_s"})
    cell[c] = number_text(m.at(c).get<double>());
  cell["goodput_requests_per_s"] = number_text(m.at("goodput").at("requests_per_s").get<double>());
  cell["never_served"] = number_text(m.at("requests").at("never_served").at("count").get<double>());
  if (m.at("prefix_cache").at("enabled").get<bool>())
    cell["prefix_cache_hit_rate"] = number_text(m.at("prefix_cache").at("hit_rate").get<double>());
  cell["hbm_peak_GiB"] =
      number_text(m.at("hbm").at("peak_bytes_per_core").get<double>() / 1073741824.0);
}

std::string check_report(const nlohmann::json& report) {
  if (report.is_object() && report.contains("metrics") && report.contains("ttft_ms")) {
    std::string problem =  // tpusim serve
        check_fields(report, {"requests_per_s", "chips", "cores", "wall_s"}, {"model", "layout"});
    if (problem.empty()) try {
        std::map<std::string, std::string> cell;
        serve_cells(report, cell);
      } catch (const nlohmann::json::exception& e) {
        problem = std::string("the serve report lacks or mistypes a metric: ") + e.what();
      }
    return problem;
  }
  std::vector<std::string> numbers = report_metric_columns();
  if (report.is_object() && report.contains("time_to_train_s"))  // tpusim train
    numbers = {"time_to_train_s", "step_time_ms", "examples_per_s"};
  numbers.insert(numbers.end(), {"chips", "cores", "wall_s"});
  return check_fields(report, numbers, {"model", "layout"});
}

std::string check_oom_report(const nlohmann::json& report) {
  std::string problem = check_fields(report, {"chips", "cores"}, {"model", "layout"});
  if (problem.empty() && report.is_object() && report.contains("memory"))
    problem = check_fields(report["memory"], {"peak_bytes", "capacity_bytes", "headroom_bytes"},
                           {"peak_op"}, false);  // the headroom of a program that does not fit < 0
  else if (problem.empty())
    problem = "the report lacks or mistypes: memory";
  return problem;
}

namespace {

std::vector<std::string> results_header(const Plan& plan) {
  std::vector<std::string> h = lead_columns();
  h.insert(h.end(), plan.columns.begin(), plan.columns.end());
  const auto& trail = plan.command == "serve" ? serve_trail_columns() : trail_columns();
  h.insert(h.end(), trail.begin(), trail.end());
  return h;
}

/// The cells of point `p`'s row, its series and (a point with a result) its throughput.
std::map<std::string, std::string> point_cells(const Plan& plan, const PlanPoint& p,
                                               const PointOutcome& o,
                                               std::optional<Throughput>& tp) {
  std::map<std::string, std::string> cell;
  cell["point"] = std::to_string(p.index);
  cell["id"] = p.id;
  cell["status"] = to_string(o.state);
  for (std::size_t i = 0; i < plan.columns.size(); ++i)
    cell[plan.columns[i]] = value_text(p.values[i]);
  std::string series = finished(o.state) ? o.report["model"].get<std::string>() : "";
  for (const auto& s : plan.series_axes) series += (series.empty() ? "" : " ") + s + "=" + cell[s];
  cell["series"] = series;
  if (o.state == PointState::Oom) {
    cell["model"] = o.report["model"].get<std::string>();
    cell["layout"] = o.report["layout"].get<std::string>();
    cell["chips"] = number_text(o.report["chips"].get<double>());
    cell["cores"] = number_text(o.report["cores"].get<double>());
    memory_cells(o.report, cell);
  }
  if (o.state == PointState::Ok && o.report.contains("ttft_ms")) {  // tpusim serve
    const auto& r = o.report;
    for (const char* c : {"model", "layout"}) cell[c] = r[c].get<std::string>();
    for (const char* c : {"chips", "cores", "wall_s"}) cell[c] = number_text(r[c].get<double>());
    serve_cells(r, cell);
  } else if (o.state == PointState::Ok) {
    const auto& r = o.report;
    cell["model"] = r["model"].get<std::string>();
    cell["layout"] = r["layout"].get<std::string>();
    for (const auto& c : report_metric_columns())
      if (r.contains(c)) cell[c] = number_text(r[c].get<double>());
    for (const auto& c : optional_metric_columns()) {
      const auto it = r.find(c);
      if (it != r.end() && it->is_number() && std::isfinite(it->get<double>()))
        cell[c] = number_text(it->get<double>());
    }
    if (r.contains("time_to_train_s"))
      cell["time_to_train_s"] = number_text(r["time_to_train_s"].get<double>());
    const double chips = r["chips"].get<double>();
    cell["chips"] = number_text(chips);
    cell["cores"] = number_text(r["cores"].get<double>());
    cell["wall_s"] = number_text(r["wall_s"].get<double>());
    memory_cells(r, cell);
    cell["examples_per_s_per_chip"] = number_text(r["examples_per_s"].get<double>() / chips);
    tp = Throughput{chips, r["examples_per_s"].get<double>()};
  } else if (o.state == PointState::Failed) {
    cell["error"] = o.error;
  }
  return cell;
}

std::vector<std::string> row_of(const std::vector<std::string>& header,
                                std::map<std::string, std::string>& cell) {
  std::vector<std::string> row;
  for (const auto& h : header) row.push_back(cell[h]);
  return row;
}

/// Scaling efficiency: per-chip throughput over the reference's, "" without a positive reference.
std::string efficiency_text(const Throughput& tp, const Throughput& ref) {
  const double ref_per_chip = ref.examples_per_s / ref.chips;
  return ref_per_chip > 0 ? number_text(tp.examples_per_s / tp.chips / ref_per_chip) : "";
}

}  // namespace

CsvTable results_table(const Plan& plan, const std::vector<std::size_t>& indices,
                       const std::function<PointOutcome(const PlanPoint&)>& outcome) {
  CsvTable t;
  t.header = results_header(plan);
  std::vector<std::optional<Throughput>> throughput;
  std::map<std::string, Throughput> reference;  // per series: the point with the fewest chips
  for (std::size_t idx : indices) {
    std::optional<Throughput> tp;
    auto cell = point_cells(plan, plan.points.at(idx), outcome(plan.points.at(idx)), tp);
    if (tp) {
      auto ref = reference.find(cell["series"]);
      if (ref == reference.end() || tp->chips < ref->second.chips) reference[cell["series"]] = *tp;
    }
    throughput.push_back(tp);
    t.rows.push_back(row_of(t.header, cell));
  }
  const auto eff_col = static_cast<std::size_t>(t.column("scaling_efficiency"));
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    if (throughput[r])
      t.rows[r][eff_col] = efficiency_text(*throughput[r], reference.at(t.cell(r, "series")));
  return t;
}

ResultsRows::ResultsRows(const Plan& plan) : plan_(plan), header_(results_header(plan)) {}

std::vector<std::string> ResultsRows::add(const PlanPoint& p, const PointOutcome& o) {
  std::optional<Throughput> tp;
  auto cell = point_cells(plan_, p, o, tp);
  if (tp) {
    auto ref = reference_.find(cell["series"]);
    if (ref == reference_.end() || tp->chips < ref->second.chips)
      ref = reference_.insert_or_assign(cell["series"], *tp).first;
    cell["scaling_efficiency"] = efficiency_text(*tp, ref->second);
  }
  return row_of(header_, cell);
}

}  // namespace tpusim::sweep
