#include "tools/serve/capacity_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/output_file.hpp"
#include "tools/report/run_report.hpp"
#include "tools/serve/serving_config.hpp"
#include "tools/serve/step_times.hpp"
#include "tools/sweep/csv_table.hpp"

namespace tpusim::serve {
namespace {

using SearchClock = std::chrono::steady_clock;

std::string problems_line(const ConfigError& e) {
  std::string out;
  for (const Problem& p : e.problems()) out += (out.empty() ? "" : "; ") + p.line();
  return out;
}

// "max_num_seqs=64 quantization=int8": the last part of each path and its value.
std::string config_label(const std::vector<CapacityAxis>& axes,
                         const std::vector<std::size_t>& at) {
  std::string out;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::string& p = axes[i].path;
    out += (out.empty() ? "" : " ") + p.substr(p.rfind('.') + 1) + "=" + axes[i].values[at[i]];
  }
  return out;
}

nlohmann::json value_json(const std::string& text) {
  auto v = nlohmann::json::parse(text, nullptr, false);
  return v.is_discarded() ? nlohmann::json(text) : v;
}

// The --set options but those of a path the space varies (its value comes from the space).
std::vector<std::string> sets_without(const ServeArgs& a, const std::string& path) {
  std::vector<std::string> sets;
  for (const auto& s : a.sets)
    if (s.substr(0, s.find('=')) != path) sets.push_back(s);
  return sets;
}

std::vector<std::string> sets_of(const ServeArgs& a, const std::vector<CapacityAxis>& axes,
                                 const std::vector<std::size_t>& at) {
  std::vector<std::string> sets = a.sets;
  for (const auto& axis : axes) {
    ServeArgs kept;
    kept.sets = std::move(sets);
    sets = sets_without(kept, axis.path);
  }
  for (std::size_t i = 0; i < axes.size(); ++i)
    sets.push_back(axes[i].path + "=" + axes[i].values[at[i]]);
  return sets;
}

CapacityAxis parse_axis(const std::string& option, const Config& base) {
  const std::string where = "--space " + option;
  const auto eq = option.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(where, "expected PATH=V1,V2,... e.g. --space serving.max_num_seqs=32,64");
  CapacityAxis axis{option.substr(0, eq), {}};
  if (!base.has(axis.path) || axis.path.rfind("topology", 0) == 0)
    throw ConfigError(where, "'" + axis.path +
                                 "' is not a key the study declares (topology excluded); "
                                 "`tpusim params` lists them");
  const std::string rest = option.substr(eq + 1);
  for (std::size_t start = 0; start <= rest.size();) {
    const auto comma = rest.find(',', start);
    const std::string item =
        rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw ConfigError(where, "an empty value in the list");
    if (std::count(axis.values.begin(), axis.values.end(), item) > 0)
      throw ConfigError(where, "'" + item + "' is listed twice; list each value once");
    axis.values.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return axis;
}

// The Server rate, then the Offline throughput, of a row that ran; -1 for one that did not.
std::pair<double, double> rank_key(const nlohmann::json& r) {
  if (r["status"] != "ok") return {-1, -1};
  const auto& f = r["find_rate"];
  const double server =
      f["server"]["found"].get<bool>() ? f["server"]["rate_per_s"].get<double>() : 0;
  return {server, f["offline"]["requests_per_s"].get<double>()};
}

nlohmann::json run_point(const ServeArgs& a, const std::vector<CapacityAxis>& axes,
                         const std::vector<std::size_t>& at, const std::string& prefix) {
  nlohmann::json row = {{"configuration", config_label(axes, at)},
                        {"values", nlohmann::json::object()},
                        {"status", "ok"},
                        {"error", ""}};
  for (std::size_t i = 0; i < axes.size(); ++i)
    row["values"][axes[i].path] = value_json(axes[i].values[at[i]]);
  try {
    const cli::Study study =
        cli::load_study_file(a.study, sets_of(a, axes, at), cli::LayoutChecks::None);
    const nlohmann::json rep = find_rate_report(study, prefix);
    for (const char* k :
         {"model", "layout", "scheduler", "chips", "cores", "step_shapes_simulated", "wall_s"})
      row[k] = rep[k];
    row["find_rate"] = rep["find_rate"];
    row["find_rate"].erase("tried");
    const double chips = rep["chips"].get<double>();
    const auto& f = rep["find_rate"];
    row["per_chip"] = {
        {"server_rate_per_s", f["server"]["rate_per_s"].get<double>() / chips},
        {"offline_requests_per_s", f["offline"]["requests_per_s"].get<double>() / chips},
        {"offline_output_tokens_per_s", f["offline"]["output_tokens_per_s"].get<double>() / chips}};
  } catch (const DoesNotFit& e) {
    row["status"] = "does_not_fit";
    row["error"] = problems_line(e);
  } catch (const ConfigError& e) {
    row["status"] = "invalid";
    row["error"] = problems_line(e);
  }
  return row;
}

std::string eta_text(double seconds) {
  return seconds < 90 ? fmt::format("{:.0f} s", seconds) : fmt::format("{:.1f} min", seconds / 60);
}

}  // namespace

std::vector<CapacityAxis> read_space(const ServeArgs& a) {
  const cli::Study base = cli::load_study_file(a.study, a.sets, cli::LayoutChecks::None);
  std::vector<CapacityAxis> axes;
  std::size_t total = 1;
  for (const std::string& option : a.space) {
    CapacityAxis axis = parse_axis(option, base.config);
    for (const auto& other : axes)
      if (other.path == axis.path)
        throw ConfigError("--space " + option, "'" + axis.path + "' is given twice");
    // Each value alone on the study: a value its parameter refuses is an error, not a row.
    for (const std::string& v : axis.values) {
      std::vector<std::string> sets = sets_without(a, axis.path);
      sets.push_back(axis.path + "=" + v);
      try {
        read_serving(cli::load_study_file(a.study, sets, cli::LayoutChecks::None).config);
      } catch (const ConfigError& e) {
        throw ConfigError("--space " + axis.path + "=" + v, problems_line(e));
      }
    }
    if (total > kMaxPlanLayouts / axis.values.size())
      throw ConfigError("--space", "more than " + std::to_string(kMaxPlanLayouts) +
                                       " configurations, " +
                                       past_limit(static_cast<double>(kMaxPlanLayouts),
                                                  "configurations", "kMaxPlanLayouts"));
    total *= axis.values.size();
    axes.push_back(std::move(axis));
  }
  return axes;
}

nlohmann::json capacity_search(const ServeArgs& a, const std::vector<CapacityAxis>& axes) {
  const auto start = SearchClock::now();
  std::size_t total = 1;
  for (const auto& axis : axes) total *= axis.values.size();
  const bool terminal = cli::progress_interval_s() > 0;
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::size_t> at(axes.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    const double spent = std::chrono::duration<double>(SearchClock::now() - start).count();
    const std::string prefix = fmt::format(
        "serve --space: configuration {} of {} ({}){}; ", n + 1, total, config_label(axes, at),
        n == 0 ? "" : ", ETA " + eta_text(spent / static_cast<double>(n) * (total - n)));
    if (terminal) std::cerr << "\r\033[K" << prefix << std::flush;
    rows.push_back(run_point(a, axes, at, prefix));
    rows.back()["point"] = n;
    for (std::size_t i = axes.size(); i-- > 0;) {  // the last axis innermost
      if (++at[i] < axes[i].values.size()) break;
      at[i] = 0;
    }
  }
  if (terminal) std::cerr << "\r\033[K" << std::flush;
  std::vector<nlohmann::json> ranked(rows.begin(), rows.end());
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const nlohmann::json& x, const nlohmann::json& y) { return rank_key(x) > rank_key(y); });
  nlohmann::json out = {{"schema_version", 1},
                        {"tpusim_version", TPUSIM_VERSION},
                        {"study", a.study},
                        {"space", nlohmann::json::array()},
                        {"rows", nlohmann::json::array()},
                        {"winner", nullptr}};
  for (const auto& axis : axes) {
    nlohmann::json v = nlohmann::json::array();
    for (const auto& text : axis.values) v.push_back(value_json(text));
    out["space"].push_back({{"path", axis.path}, {"values", v}});
  }
  for (std::size_t r = 0; r < ranked.size(); ++r) {
    ranked[r]["rank"] = ranked[r]["status"] == "ok" ? nlohmann::json(r + 1) : nlohmann::json();
    out["rows"].push_back(ranked[r]);
  }
  const auto& first = out["rows"].front();
  if (first["status"] == "ok" && first["find_rate"]["server"]["found"].get<bool>())
    out["winner"] = first;
  out["wall_s"] = std::chrono::duration<double>(SearchClock::now() - start).count();
  return out;
}

namespace {

std::string cell_number(const nlohmann::json& v) {
  return v.is_number() ? sweep::number_text(v.get<double>()) : "";
}

void print_search(std::ostream& o, const nlohmann::json& j, std::size_t axes) {
  o << fmt::format(
      "tpusim serve --find-rate --space {}: {} configurations, limits p99 TTFT {} ms, TPOT {} ms\n",
      j["study"].get<std::string>(), j["rows"].size(), j["limits"]["ttft_ms_p99"].get<double>(),
      j["limits"]["tpot_ms_p99"].get<double>());
  std::size_t w = 13;  // "configuration"
  for (const auto& r : j["rows"]) w = std::max(w, r["configuration"].get<std::string>().size());
  o << fmt::format("{:>4}  {:<{}} {:>10} {:>8} {:>9} {:>9} {:>10} {:>8} {:>10}\n", "rank",
                   "configuration", w, "Server/s", "per chip", "TTFT p99", "TPOT p99", "Offline/s",
                   "per chip", "out tok/s");
  for (const auto& r : j["rows"]) {
    const std::string name = r["configuration"].get<std::string>();
    if (r["status"] != "ok") {
      o << fmt::format("{:>4}  {:<{}} {}: {}\n", "-", name, w,
                       r["status"] == "does_not_fit" ? "does not fit" : "invalid",
                       r["error"].get<std::string>());
      continue;
    }
    const auto& f = r["find_rate"];
    const auto& pc = r["per_chip"];
    const bool found = f["server"]["found"].get<bool>();
    o << fmt::format(
        "{:>4}  {:<{}} {:>10} {:>8} {:>9} {:>9} {:>10.2f} {:>8.3f} {:>10.0f}\n",
        r["rank"].get<int>(), name, w,
        found ? fmt::format("{:.3f}", f["server"]["rate_per_s"].get<double>()) : "none",
        found ? fmt::format("{:.3f}", pc["server_rate_per_s"].get<double>()) : "",
        found ? fmt::format("{:.1f}", f["server"]["ttft_ms"]["p99"].get<double>()) : "",
        found ? fmt::format("{:.1f}", f["server"]["tpot_ms"]["p99"].get<double>()) : "",
        f["offline"]["requests_per_s"].get<double>(), pc["offline_requests_per_s"].get<double>(),
        f["offline"]["output_tokens_per_s"].get<double>());
  }
  if (j["winner"].is_null()) {
    o << "  winner      none: no configuration meets the limits at p99 at any rate tried\n";
  } else {
    const auto& w = j["winner"];
    o << fmt::format(
        "  winner      {}: Server {:.3f} requests/s ({:.3f} per chip), Offline {:.2f} "
        "requests/s\n",
        w["configuration"].get<std::string>(), w["find_rate"]["server"]["rate_per_s"].get<double>(),
        w["per_chip"]["server_rate_per_s"].get<double>(),
        w["find_rate"]["offline"]["requests_per_s"].get<double>());
  }
  o << fmt::format("  {} axes; {:.2f} s wall\n", axes, j["wall_s"].get<double>());
}

// results.csv: a sweep's conventions (tools/sweep/columns.hpp): point, id, status, one column
// per axis, then the configuration's machine, its find-rate metrics, wall_s and error; the
// rows in the space's order, with their rank.
sweep::CsvTable search_table(const nlohmann::json& j) {
  sweep::CsvTable t;
  t.header = {"point", "id", "status"};
  for (const auto& axis : j["space"]) t.header.push_back(axis["path"].get<std::string>());
  for (const char* c :
       {"model", "layout", "scheduler", "chips", "cores", "rank", "server_rate_per_s",
        "server_rate_per_s_per_chip", "server_ttft_ms_p99", "server_tpot_ms_p99",
        "offline_requests_per_s", "offline_requests_per_s_per_chip", "offline_output_tokens_per_s",
        "offline_output_tokens_per_s_per_chip", "step_shapes_simulated", "wall_s", "error"})
    t.header.push_back(c);
  std::vector<nlohmann::json> rows(j["rows"].begin(), j["rows"].end());
  std::sort(rows.begin(), rows.end(), [](const nlohmann::json& x, const nlohmann::json& y) {
    return x["point"].get<std::size_t>() < y["point"].get<std::size_t>();
  });
  for (const auto& r : rows) {
    std::map<std::string, std::string> cell;
    cell["point"] = std::to_string(r["point"].get<std::size_t>());
    cell["id"] = r["configuration"].get<std::string>();
    cell["status"] = r["status"].get<std::string>();
    cell["error"] = r["error"].get<std::string>();
    for (const auto& el : r["values"].items())
      cell[el.key()] = el.value().is_string() ? el.value().get<std::string>() : el.value().dump();
    if (r["status"] == "ok") {
      for (const char* c : {"model", "layout", "scheduler"}) cell[c] = r[c].get<std::string>();
      for (const char* c : {"chips", "cores", "rank", "step_shapes_simulated", "wall_s"})
        cell[c] = cell_number(r[c]);
      const auto& f = r["find_rate"];
      const auto& pc = r["per_chip"];
      if (f["server"]["found"].get<bool>()) {
        cell["server_rate_per_s"] = cell_number(f["server"]["rate_per_s"]);
        cell["server_rate_per_s_per_chip"] = cell_number(pc["server_rate_per_s"]);
        cell["server_ttft_ms_p99"] = cell_number(f["server"]["ttft_ms"]["p99"]);
        cell["server_tpot_ms_p99"] = cell_number(f["server"]["tpot_ms"]["p99"]);
      }
      cell["offline_requests_per_s"] = cell_number(f["offline"]["requests_per_s"]);
      cell["offline_requests_per_s_per_chip"] = cell_number(pc["offline_requests_per_s"]);
      cell["offline_output_tokens_per_s"] = cell_number(f["offline"]["output_tokens_per_s"]);
      cell["offline_output_tokens_per_s_per_chip"] = cell_number(pc["offline_output_tokens_per_s"]);
    }
    t.rows.emplace_back();
    for (const auto& h : t.header) t.rows.back().push_back(cell[h]);
  }
  return t;
}

}  // namespace

int run_capacity_search(const ServeArgs& a) {
  if (!a.find_rate)
    throw ConfigError("--space", "searches configurations for their --find-rate; add --find-rate");
  if (!a.timeline.empty())
    throw ConfigError("--timeline", "is one serve's; a --space search writes none");
  std::error_code ec;
  if (!a.out.empty() && std::filesystem::exists(a.out, ec) &&
      !std::filesystem::is_directory(a.out, ec))
    throw ConfigError("--out " + a.out,
                      "is not a folder; search.json and results.csv are written into a folder, "
                      "created if missing");
  const std::vector<CapacityAxis> axes = read_space(a);
  const ServingConfig base =
      read_serving(cli::load_study_file(a.study, a.sets, cli::LayoutChecks::None).config);
  nlohmann::json j = capacity_search(a, axes);
  j["limits"] = {{"ttft_ms_p99", base.ttft_limit_ms}, {"tpot_ms_p99", base.tpot_limit_ms}};
  if (!a.out.empty()) {
    std::filesystem::create_directories(a.out);
    write_output_file(a.out + "/search.json", j.dump(2) + "\n");
    sweep::write_csv(a.out + "/results.csv", search_table(j));
  }
  if (a.json)
    std::cout << j.dump(2) << "\n";
  else
    print_search(std::cout, j, axes.size());
  return 0;
}

}  // namespace tpusim::serve
