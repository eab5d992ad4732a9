#include "tools/serve/serve_run.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "models/model_builder.hpp"
#include "models/parallelism/layout.hpp"
#include "tools/report/run_report.hpp"
#include "tools/serve/capacity_search.hpp"
#include "tools/serve/requests.hpp"
#include "tools/serve/scheduler.hpp"
#include "tools/serve/serve_metrics.hpp"
#include "tools/serve/step_times.hpp"
#include "tools/study/study.hpp"
#include "tools/sweep/columns.hpp"
#include "tools/sweep/csv_table.hpp"
#include "tools/sweep/results.hpp"

namespace tpusim::serve {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr int kSearchSteps = 12;  // --find-rate: bisections of the rate (1/4096 of Offline's)

// A progress line on a terminal (stderr), quiet when piped.
class Progress {
 public:
  explicit Progress(std::string prefix = "")
      : prefix_(std::move(prefix)), interval_(cli::progress_interval_s()), last_(Clock::now()) {}
  void show(const std::string& text) {
    const std::string what = prefix_ + text;
    if (interval_ <= 0) return;
    const auto now = Clock::now();
    if (std::chrono::duration<double>(now - last_).count() < interval_) return;
    last_ = now;
    std::cerr << "\r\033[K" << what << std::flush;
    shown_ = true;
  }
  ~Progress() {
    if (shown_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  std::string prefix_;  ///< a capacity search's configuration and ETA
  double interval_;
  Clock::time_point last_;
  bool shown_ = false;
};

std::string csv_requests(const std::vector<Request>& req, const ServeRun& run) {
  std::ostringstream o;
  o << "request,arrival_s,input_tokens,output_tokens,ttft_ms,tpot_ms,e2e_ms,never_served\n";
  for (std::size_t i = 0; i < req.size(); ++i) {
    const RequestResult& x = run.results[i];
    o << i << ',' << req[i].arrival_s << ',' << req[i].input << ',' << req[i].output << ',';
    if (x.never.empty()) {
      const double tpot = req[i].output > 1 ? (x.done_s - x.first_token_s) * 1e3 /
                                                  static_cast<double>(req[i].output - 1)
                                            : 0;
      o << (x.first_token_s - req[i].arrival_s) * 1e3 << ',' << tpot << ','
        << (x.done_s - req[i].arrival_s) * 1e3 << ",\n";
    } else {
      o << ",,," << x.never << "\n";
    }
  }
  return o.str();
}

std::string csv_occupancy(const ServeRun& run) {
  std::ostringstream o;
  o << "t_s,engine,slots,kv_tokens\n";
  for (const Occupancy& x : run.occupancy)
    o << x.t << ',' << (x.engine == 0 ? "decode" : "prefill") << ',' << x.slots << ','
      << x.kv_tokens << "\n";
  return o.str();
}

// Chrome trace events: one track per engine with its steps, counters of slots and KV tokens.
std::string timeline_json(const ServeRun& run) {
  nlohmann::json ev = nlohmann::json::array();
  for (int e = 0; e < 2; ++e)
    ev.push_back({{"name", "process_name"},
                  {"ph", "M"},
                  {"pid", e},
                  {"args", {{"name", e == 0 ? "engine (decode)" : "prefill slice"}}}});
  for (const StepRecord& s : run.steps)
    ev.push_back({{"name", s.kind},
                  {"ph", "X"},
                  {"pid", s.engine},
                  {"tid", std::string(s.kind) == "kv_transfer" ? 1 : 0},
                  {"ts", s.start * 1e6},
                  {"dur", (s.end - s.start) * 1e6},
                  {"args", {{"batch", s.batch}, {"prompt_tokens", s.tokens}}}});
  for (const Occupancy& o : run.occupancy)
    ev.push_back({{"name", "occupancy"},
                  {"ph", "C"},
                  {"pid", o.engine},
                  {"ts", o.t * 1e6},
                  {"args", {{"slots", o.slots}, {"kv_tokens", o.kv_tokens}}}});
  return nlohmann::json{{"traceEvents", ev}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

std::string ms_line(const nlohmann::json& j) {
  return fmt::format("mean {:9.1f}  p50 {:9.1f}  p90 {:9.1f}  p99 {:9.1f}", j["mean"].get<double>(),
                     j["p50"].get<double>(), j["p90"].get<double>(), j["p99"].get<double>());
}

void print_text(std::ostream& o, const nlohmann::json& j) {
  const auto& m = j["metrics"];
  o << fmt::format("tpusim serve {}: {}, chips: {} ({}), scheduler {}\n",
                   j["study"].get<std::string>(), j["model"].get<std::string>(),
                   j["chips"].get<int>(), j["layout"].get<std::string>(),
                   j["scheduler"].get<std::string>());
  o << fmt::format("  requests    {} served, {} never served\n",
                   m["requests"]["served"].get<std::size_t>(),
                   m["requests"]["never_served"]["count"].get<std::size_t>());
  for (const auto& el : m["requests"]["never_served"]["reasons"].items())
    o << fmt::format("              {} {}\n", el.value().get<std::size_t>(), el.key());
  o << "  TTFT ms     " << ms_line(m["ttft_ms"]) << "\n";
  o << "  TPOT ms     " << ms_line(m["tpot_ms"]) << "\n";
  o << "  E2E ms      " << ms_line(m["e2e_ms"]) << "\n";
  o << fmt::format(
      "  throughput  {:.2f} requests/s, {:.0f} input tokens/s, {:.0f} output tokens/s "
      "over {:.3f} s\n",
      m["requests_per_s"].get<double>(), m["input_tokens_per_s"].get<double>(),
      m["output_tokens_per_s"].get<double>(), m["duration_s"].get<double>());
  o << fmt::format(
      "  goodput     {:.2f} requests/s ({:.1f} %) within TTFT {} ms, TPOT {} ms\n",
      m["goodput"]["requests_per_s"].get<double>(), 100 * m["goodput"]["fraction"].get<double>(),
      m["goodput"]["ttft_ms_limit"].get<double>(), m["goodput"]["tpot_ms_limit"].get<double>());
  if (m["prefix_cache"]["enabled"].get<bool>())
    o << fmt::format(
        "  prefix      {} of {} lookups hit ({:.1f} %), {:.0f} prompt tokens cached "
        "({:.1f} %), {} blocks evicted\n",
        m["prefix_cache"]["hits"].get<std::int64_t>(),
        m["prefix_cache"]["lookups"].get<std::int64_t>(),
        100 * m["prefix_cache"]["hit_rate"].get<double>(),
        m["prefix_cache"]["cached_tokens"].get<double>(),
        100 * m["prefix_cache"]["token_hit_rate"].get<double>(),
        m["prefix_cache"]["evicted_blocks"].get<std::int64_t>());
  const auto& sl = m["occupancy"]["slots"];
  const auto& kv = m["occupancy"]["kv_cache"];
  o << fmt::format("  slots       mean {:.1f}, max {:.0f} of {}\n", sl["mean"].get<double>(),
                   sl["max"].get<double>(), sl["capacity"].get<std::int64_t>());
  o << fmt::format("  KV cache    mean {:.1f} %, max {:.1f} % of {:.0f} tokens\n",
                   100 * kv["mean_fraction"].get<double>(), 100 * kv["max_fraction"].get<double>(),
                   kv["capacity_tokens"].get<double>());
  o << fmt::format(
      "  HBM         peak {:.2f} GiB per core of {:.2f} (weights and activations "
      "{:.2f})\n",
      m["hbm"]["peak_bytes_per_core"].get<double>() / kGiB,
      m["hbm"]["capacity_bytes_per_core"].get<double>() / kGiB,
      m["hbm"]["static_bytes_per_core"].get<double>() / kGiB);
  o << fmt::format(
      "  steps       {} iterations; {} step shapes simulated ({:.2f} s); {:.2f} s "
      "wall\n",
      m["iterations"].get<std::int64_t>(), j["step_shapes_simulated"].get<int>(),
      j["simulate_wall_s"].get<double>(), j["wall_s"].get<double>());
}

nlohmann::json run_once(const std::vector<Request>& req, const ServingConfig& s, StepTimes& t,
                        ServeRun* keep, bool steps, Progress& progress) {
  const std::size_t n = req.size();
  ServeRun run = run_scheduler(req, s, t, steps, [&](std::size_t done) {
    progress.show(fmt::format("serve: {} of {} requests done, {} step shapes simulated", done, n,
                              t.simulated()));
  });
  nlohmann::json m = serve_metrics(req, run, s, t.capacity());
  if (keep) *keep = std::move(run);
  return m;
}

bool meets(const nlohmann::json& m, const ServingConfig& s) {
  return m["ttft_ms"]["p99"].get<double>() <= s.ttft_limit_ms &&
         m["tpot_ms"]["p99"].get<double>() <= s.tpot_limit_ms &&
         m["requests"]["served"].get<std::size_t>() > 0;
}

// MLPerf: Offline is every request at once; Server the highest Poisson rate whose p99 TTFT and
// TPOT meet the limits, by bisection between 0 and the Offline rate.
nlohmann::json find_rate(const std::vector<Request>& req, const ServingConfig& s, StepTimes& t,
                         Progress& progress) {
  const nlohmann::json offline =
      run_once(with_poisson_arrivals(req, 0, s.seed), s, t, nullptr, false, progress);
  double lo = 0, hi = offline["requests_per_s"].get<double>();
  nlohmann::json best, tried = nlohmann::json::array();
  for (int i = 0; i < kSearchSteps; ++i) {
    const double rate = (lo + hi) / 2;
    const nlohmann::json m =
        run_once(with_poisson_arrivals(req, rate, s.seed), s, t, nullptr, false, progress);
    const bool ok = meets(m, s);
    tried.push_back({{"rate_per_s", rate},
                     {"ttft_ms_p99", m["ttft_ms"]["p99"]},
                     {"tpot_ms_p99", m["tpot_ms"]["p99"]},
                     {"meets", ok}});
    (ok ? lo : hi) = rate;
    if (ok) best = m;
  }
  return {{"offline",
           {{"requests_per_s", offline["requests_per_s"]},
            {"output_tokens_per_s", offline["output_tokens_per_s"]},
            {"input_tokens_per_s", offline["input_tokens_per_s"]}}},
          {"server",
           {{"rate_per_s", lo},
            {"ttft_ms", best.is_null() ? nlohmann::json() : best["ttft_ms"]},
            {"tpot_ms", best.is_null() ? nlohmann::json() : best["tpot_ms"]},
            {"found", !best.is_null()}}},
          {"limits", {{"ttft_ms_p99", s.ttft_limit_ms}, {"tpot_ms_p99", s.tpot_limit_ms}}},
          {"tried", tried}};
}

void print_find_rate(std::ostream& o, const nlohmann::json& j) {
  const auto& f = j["find_rate"];
  o << fmt::format("tpusim serve --find-rate {}: scheduler {}\n", j["study"].get<std::string>(),
                   j["scheduler"].get<std::string>());
  o << fmt::format("  Offline     {:.2f} requests/s, {:.0f} output tokens/s\n",
                   f["offline"]["requests_per_s"].get<double>(),
                   f["offline"]["output_tokens_per_s"].get<double>());
  if (f["server"]["found"].get<bool>())
    o << fmt::format(
        "  Server      {:.3f} requests/s with p99 TTFT {:.1f} ms (limit {}), p99 TPOT "
        "{:.1f} ms (limit {})\n",
        f["server"]["rate_per_s"].get<double>(), f["server"]["ttft_ms"]["p99"].get<double>(),
        f["limits"]["ttft_ms_p99"].get<double>(), f["server"]["tpot_ms"]["p99"].get<double>(),
        f["limits"]["tpot_ms_p99"].get<double>());
  else
    o << "  Server      no rate meets the limits at p99 (the lowest tried fails)\n";
  o << fmt::format("  {} step shapes simulated; {:.2f} s wall\n",
                   j["step_shapes_simulated"].get<int>(), j["wall_s"].get<double>());
}

// The serve's row of results.csv: the columns a serve sweep has (tools/sweep/columns.hpp).
sweep::CsvTable results_row(const nlohmann::json& j) {
  std::map<std::string, std::string> cell;
  cell["study"] = j["study"].get<std::string>();
  for (const char* c : {"model", "layout", "scheduler"}) cell[c] = j[c].get<std::string>();
  for (const char* c : {"chips", "cores", "wall_s"})
    cell[c] = sweep::number_text(j[c].get<double>());
  sweep::serve_cells(j, cell);
  sweep::CsvTable t;
  t.header = {"study", "model", "layout", "scheduler", "chips", "cores"};
  t.header.insert(t.header.end(), sweep::serve_metric_columns().begin(),
                  sweep::serve_metric_columns().end());
  t.header.push_back("wall_s");
  t.rows.emplace_back();
  for (const auto& h : t.header) t.rows.back().push_back(cell[h]);
  return t;
}

void check_outputs(const ServeArgs& a) {
  if (!a.timeline.empty()) check_output_path(a.timeline, "--timeline");
  if (a.out.empty()) return;
  std::error_code ec;
  if (std::filesystem::exists(a.out, ec) && !std::filesystem::is_directory(a.out, ec))
    throw ConfigError("--out " + a.out,
                      "is not a folder; serve.json, results.csv, requests.csv and "
                      "occupancy.csv are written into a folder, created if "
                      "missing");
}

nlohmann::json report_head(const cli::Study& study, const ServingConfig& s) {
  const Topology topology(study.topology);
  return {{"schema_version", 1},
          {"tpusim_version", TPUSIM_VERSION},
          {"study", study.source},
          {"model", kWorkloadModel(study.config)},
          {"chips", topology.num_chips()},
          {"cores", topology.num_chips() * study.hardware.devices_per_chip},
          {"layout", "model=" + std::to_string(kParallelismModel(study.config))},
          {"scheduler", s.scheduler}};
}

}  // namespace

nlohmann::json find_rate_report(const cli::Study& study, const std::string& progress_prefix) {
  const auto start = Clock::now();
  const ServingConfig s = read_serving(study.config);
  StepTimes times(study, s);
  const std::vector<Request> requests = make_requests(s);
  Progress progress(progress_prefix);
  times.on_simulated = [&](int n) {
    progress.show(fmt::format("serve: {} step shapes simulated", n));
  };
  nlohmann::json j = report_head(study, s);
  j["find_rate"] = find_rate(requests, s, times, progress);
  j["step_shapes_simulated"] = times.simulated();
  j["simulate_wall_s"] = times.simulate_seconds();
  j["wall_s"] = std::chrono::duration<double>(Clock::now() - start).count();
  return j;
}

int run_serve(const ServeArgs& a) {
  if (!a.space.empty()) return run_capacity_search(a);
  const auto start = Clock::now();
  check_outputs(a);
  const cli::Study study = cli::load_study_file(a.study, a.sets, cli::LayoutChecks::None);
  const ServingConfig s = read_serving(study.config);
  // The step times first: their worker process is forked while the memory is small.
  StepTimes times(study, s);
  const std::vector<Request> requests = make_requests(s);
  Progress progress;
  times.on_simulated = [&](int n) {
    progress.show(fmt::format("serve: {} step shapes simulated", n));
  };
  nlohmann::json j = report_head(study, s);
  ServeRun run;
  if (a.find_rate) {
    j["find_rate"] = find_rate(requests, s, times, progress);
  } else {
    j["metrics"] =
        run_once(requests, s, times, &run, !a.timeline.empty() || !a.out.empty(), progress);
    j["ttft_ms"] = j["metrics"]["ttft_ms"];
    j["tpot_ms"] = j["metrics"]["tpot_ms"];
    j["requests_per_s"] = j["metrics"]["requests_per_s"];
  }
  j["step_shapes_simulated"] = times.simulated();
  j["simulate_wall_s"] = times.simulate_seconds();
  j["wall_s"] = std::chrono::duration<double>(Clock::now() - start).count();
  j["config"] = study.config.json();
  if (!a.timeline.empty()) write_output_file(a.timeline, timeline_json(run));
  if (!a.out.empty()) {
    std::filesystem::create_directories(a.out);
    write_output_file(a.out + "/serve.json", j.dump(2) + "\n");
    if (!a.find_rate) {
      sweep::write_csv(a.out + "/results.csv", results_row(j));
      write_output_file(a.out + "/requests.csv", csv_requests(requests, run));
      write_output_file(a.out + "/occupancy.csv", csv_occupancy(run));
    }
  }
  if (a.json)
    std::cout << j.dump(2) << "\n";
  else if (a.find_rate)
    print_find_rate(std::cout, j);
  else
    print_text(std::cout, j);
  return 0;
}

}  // namespace tpusim::serve
