// tpusim plot draws real sweep results: files of the right formats, one colour per series.
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "tests/cli/png_pixels.hpp"
#include "tests/cli/sweep_fixture.hpp"

using nlohmann::json;

namespace {

// The first three colours of the plot's palette (Okabe-Ito), as 8-bit RGB.
const std::vector<std::array<int, 3>> kSeriesColours{{0, 115, 179}, {230, 158, 0}, {0, 158, 115}};

/// Which of `colours` appear in the PNG.
std::set<std::size_t> colours_in(const std::string& png,
                                 const std::vector<std::array<int, 3>>& colours = kSeriesColours) {
  std::set<std::size_t> found;
  colour_pixels(png, colours, [&](int, int, std::size_t k) { found.insert(k); });
  return found;
}

/// Two topologies by two ICI bandwidths on the small BERT study.
json topology_by_ici_sweep_doc() {
  return {{"base", small_bert_study()},
          {"axes",
           {{{"path", "topology"}, {"values", {"2x2", "4x2"}}},
            {{"name", "ici"}, {"path", "hardware.ici.bandwidth_GBps"}, {"values", {50, 100}}}}}};
}
/// That sweep's folder, swept once per process (`-j 2`): the cases that plot its results.csv
/// as it is, or an edited copy of it, share it (plot writes only into its own --out).
const std::string& topology_by_ici_results() {
  static const SweepScratch scratch;
  static const std::string out = [] {
    auto r = run_tpusim({"sweep", scratch.write("s.json", topology_by_ici_sweep_doc()), "-j", "2",
                         "--out", scratch.path("out")});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return scratch.path("out");
  }();
  return out;
}

}  // namespace

TEST_CASE("plot writes SVG and PNG scaling curves with one line per series") {
  SweepScratch s;
  auto p = run_tpusim({"plot", "--dpi", "96", topology_by_ici_results() + "/results.csv", "--out",
                       s.path("plots")});
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  CHECK_THAT(p.err, Catch::Contains("x = chips, 2 series"));
  for (const char* chart : {"step_time", "examples_per_chip", "scaling_efficiency", "comm_share"}) {
    const std::string svg = slurp(s.path(std::string("plots/") + chart + ".svg"));
    CHECK(svg.rfind("<?xml", 0) == 0);
    CHECK_THAT(svg, Catch::Contains("<svg"));
    const std::string png = slurp(s.path(std::string("plots/") + chart + ".png"));
    REQUIRE(png.size() > 8);
    CHECK(png.substr(1, 3) == "PNG");
    // Two series: the first two palette colours are drawn, the third is not.
    CHECK(colours_in(s.path(std::string("plots/") + chart + ".png")) ==
          std::set<std::size_t>{0, 1});
  }
}

TEST_CASE("plot rejects a CSV that is not sweep results") {
  SweepScratch s;
  std::ofstream(s.path("x.csv")) << "a,b\n1,2\n";
  auto r = run_tpusim({"plot", s.path("x.csv"), "--out", s.path("p")});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("not a results.csv"));
}

namespace {

// The mark of points that did not succeed (dark red), as 8-bit RGB.
const std::array<int, 3> kMarkedColour{179, 13, 26};

/// Heights in pixels of palette colours 0 and 1 in the image column where their sum is largest
/// (the middle of the tallest bar).
std::pair<int, int> tallest_bar_parts(const std::string& png) {
  std::map<int, std::pair<int, int>> by_column;
  colour_pixels(png, {kSeriesColours[0], kSeriesColours[1]}, [&](int x, int, std::size_t k) {
    (k == 0 ? by_column[x].first : by_column[x].second)++;
  });
  std::pair<int, int> best{0, 0};
  for (const auto& [x, n] : by_column)
    if (n.first + n.second > best.first + best.second) best = n;
  return best;
}

}  // namespace

TEST_CASE("plot of the model-parallel sweep: x is the model degree, one series, breakdown bars") {
  SweepScratch s;
  // The shipped sweep's axis and base on an 8x8 slice, the batch scaled to its 128 data replicas
  // of degree 1: step times of the same shape as on the Multipod (20 to 34 ms) at a fraction of
  // its simulation time.
  json doc = json::parse(slurp(std::string(TPUSIM_SOURCE_DIR) +
                               "/configs/studies/sweeps/transformer_model_parallel.json"));
  doc["base"]["topology"] = "8x8";
  doc["base"]["workload"]["global_batch"] = 128;
  auto r = run_tpusim({"sweep", s.write("mp.json", doc), "-j", "2", "--out", s.path("mp")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto p = run_tpusim({"plot", "--dpi", "96", s.path("mp/results.csv"), "--out", s.path("plots")});
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  CHECK_THAT(p.err, Catch::Contains("x = parallelism.model, 1 series"));
  const auto t = results_of(s.path("mp"));
  const json m = json::parse(slurp(s.path("plots/charts.json")));
  CHECK(m["x"] == "parallelism.model");
  // Step time against the degree: the CSV's points, in order of the degree.
  const json step = chart_named(m, "step_time");
  REQUIRE(step["series"].size() == 1);
  const json& series = step["series"][0];
  REQUIRE(series["x"].size() == t.rows.size());
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    CHECK(series["x"][i].get<double>() == *t.number(i, "parallelism.model"));
    CHECK(series["y"][i].get<double>() == *t.number(i, "step_time_ms"));
  }
  // A time's y axis starts at 0 and holds every point (the steps are 20 to 34 ms).
  double hi = 0;
  for (const auto& y : series["y"]) hi = std::max(hi, y.get<double>());
  CHECK(step["y_axis"]["from"].get<double>() == 0);
  CHECK(step["y_axis"]["to"].get<double>() >= hi);
  CHECK(step["y_axis"]["break"] == false);
  // Efficiency relative to the fewest chips means nothing when the chips do not change.
  CHECK(chart_named(m, "scaling_efficiency").is_null());
  CHECK_FALSE(std::filesystem::exists(s.path("plots/scaling_efficiency.png")));

  // Breakdown: one bar per degree, compute then exposed communication, from the CSV.
  const json bars = chart_named(m, "breakdown");
  REQUIRE(bars["bars"].size() == t.rows.size());
  CHECK(bars["parts"] == json({"compute_ms", "exposed_communication_ms"}));
  std::size_t tallest = 0;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const double compute = *t.number(i, "compute_ms"),
                 exposed = *t.number(i, "exposed_communication_ms");
    CHECK(bars["bars"][i]["values"][0].get<double>() == compute);
    CHECK(bars["bars"][i]["values"][1].get<double>() == exposed);
    // Synchronous collectives: the stack is the step time.
    CHECK(compute + exposed == Approx(*t.number(i, "step_time_ms")).epsilon(1e-6));
    if (*t.number(i, "step_time_ms") > *t.number(tallest, "step_time_ms")) tallest = i;
  }
  // The drawn bar's parts have the heights of its values (within a pixel each).
  const auto [compute_px, exposed_px] = tallest_bar_parts(s.path("plots/breakdown.png"));
  const double ratio =
      *t.number(tallest, "compute_ms") / *t.number(tallest, "exposed_communication_ms");
  REQUIRE(exposed_px > 20);
  CHECK(static_cast<double>(compute_px) / exposed_px ==
        Approx(ratio).epsilon(1.0 / exposed_px + 1.0 / compute_px));
}

TEST_CASE("plot --x and several --y: one chart per metric, series by the other axes") {
  SweepScratch s;
  auto doc = topology_by_ici_sweep_doc();
  doc["series"] = {"topology"};
  const auto sweep = s.write("s.json", doc);
  REQUIRE(run_tpusim({"sweep", sweep, "-j", "2", "--out", s.path("out")}).exit_code == 0);
  const auto t = results_of(s.path("out"));
  auto p = run_tpusim({"plot", "--dpi", "96", s.path("out/results.csv"), "--out", s.path("plots"),
                       "--x", "ici", "--y", "step_time_ms", "--y", "mxu_utilization"});
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  CHECK_THAT(p.err, Catch::Contains("x = ici, 2 series, 2 charts"));
  const json m = json::parse(slurp(s.path("plots/charts.json")));
  REQUIRE(m["charts"].size() == 2);
  for (const auto& c : m["charts"]) {
    const std::string y = c["y"];
    CHECK(std::filesystem::exists(s.path("plots/" + c["file"].get<std::string>() + ".svg")));
    REQUIRE(c["series"].size() == 2);
    for (const auto& ser : c["series"]) {
      CHECK(ser["x"] == json({50.0, 100.0}));
      // Each point is the CSV row with that topology and bandwidth.
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t r = 0; r < t.rows.size(); ++r)
          if (ser["label"].get<std::string>().find("topology=" + t.cell(r, "topology")) !=
                  std::string::npos &&
              *t.number(r, "ici") == ser["x"][i].get<double>())
            CHECK(ser["y"][i].get<double>() == *t.number(r, y));
    }
  }
  // --y-from-zero: the axis starts at 0.
  auto z = run_tpusim({"plot", "--dpi", "96", s.path("out/results.csv"), "--out", s.path("z"),
                       "--x", "ici", "--y", "mxu_utilization", "--y-from-zero"});
  REQUIRE(z.exit_code == 0);
  const json mz = json::parse(slurp(s.path("z/charts.json")));
  CHECK(mz["charts"][0]["y_axis"]["from"].get<double>() == 0);
}

TEST_CASE("plot marks points that did not succeed, with or without a value") {
  SweepScratch s;
  const auto sweep =
      s.write("s.json", {{"base", small_bert_study()},
                         {"axes",
                          {{{"path", "topology"}, {"values", {"2x2", "4x2", "4x4"}}},
                           {{"path", "workload.global_batch"}, {"expr", "4 * chips"}}}}});
  REQUIRE(run_tpusim({"sweep", sweep, "-j", "2", "--out", s.path("out")}).exit_code == 0);
  // As the memory model reports it: the largest point ran out of memory (status oom, no step
  // time); another failed outright.
  auto t = results_of(s.path("out"));
  REQUIRE(t.rows.size() == 3);
  const auto status = static_cast<std::size_t>(t.column("status"));
  t.rows[2][status] = "oom";
  t.rows[1][status] = "failed";
  for (const char* c : {"step_time_ms", "compute_ms", "exposed_communication_ms"})
    t.rows[2][static_cast<std::size_t>(t.column(c))] = "";
  // A column a later report adds (peak memory), known for the oom point too.
  t.header.push_back("peak_hbm_GiB");
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    t.rows[r].push_back(std::to_string(10 + 4 * static_cast<int>(r)));
  tpusim::sweep::write_csv(s.path("edited.csv"), t);
  auto p = run_tpusim({"plot", "--dpi", "96", s.path("edited.csv"), "--out", s.path("plots")});
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  const json m = json::parse(slurp(s.path("plots/charts.json")));
  const json step = chart_named(m, "step_time");
  REQUIRE(step["did_not_succeed"].size() == 2);
  for (const auto& d : step["did_not_succeed"]) {
    const bool oom = d["status"] == "oom";
    CHECK(d["x"].get<double>() == *t.number(oom ? 2 : 1, "chips"));
    CHECK(d.contains("y") == !oom);  // the failed row kept its numbers in this edit
  }
  CHECK(step["series"][0]["x"].size() == 1);  // only the ok point is on the line
  CHECK(colours_in(s.path("plots/step_time.png"), {kMarkedColour}) == std::set<std::size_t>{0});
  // The new column gets a chart of its own; the oom point is marked at its value there.
  const json mem = chart_named(m, "peak_hbm_GiB");
  REQUIRE(mem.is_object());
  CHECK(mem["series"][0]["y"] == json({10.0}));
  bool oom_at_value = false;
  for (const auto& d : mem["did_not_succeed"])
    oom_at_value |= d["status"] == "oom" && d["y"] == 18.0;
  CHECK(oom_at_value);
  CHECK(std::filesystem::exists(s.path("plots/peak_hbm_GiB.png")));
  CHECK(colours_in(s.path("plots/breakdown.png"), {kMarkedColour}) == std::set<std::size_t>{0});
}

TEST_CASE("plot skips a standard metric a kind of report leaves empty and draws time to train") {
  SweepScratch s;
  auto t = results_of(topology_by_ici_results());
  // As a sweep of `tpusim train` writes it: no communication share, a time to train (the column
  // is in every results.csv, empty for sweeps of `tpusim run`).
  REQUIRE(t.column("time_to_train_s") >= 0);
  for (auto& row : t.rows) {
    row[static_cast<std::size_t>(t.column("comm_share"))] = "";
    row[static_cast<std::size_t>(t.column("time_to_train_s"))] = "20";
  }
  tpusim::sweep::write_csv(s.path("edited.csv"), t);
  auto p = run_tpusim({"plot", "--dpi", "96", s.path("edited.csv"), "--out", s.path("plots")});
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  const json m = json::parse(slurp(s.path("plots/charts.json")));
  CHECK(chart_named(m, "comm_share").is_null());
  CHECK(chart_named(m, "step_time").is_object());
  CHECK(chart_named(m, "time_to_train")["y"] == "time_to_train_s");
  CHECK(std::filesystem::exists(s.path("plots/time_to_train.svg")));
}

TEST_CASE("plot bad --x or --y: one line naming the option, exit code 2") {
  SweepScratch s;
  const std::string csv = topology_by_ici_results() + "/results.csv";
  for (const auto& [args, names] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--x", "nosuch"}, "--x nosuch"},
           {{"--y", "model"}, "--y model"},
           {{"--y", "nosuch_ms"}, "--y nosuch_ms"}}) {
    std::vector<std::string> cmd{"plot", "--dpi", "96", csv, "--out", s.path("p")};
    cmd.insert(cmd.end(), args.begin(), args.end());
    auto r = run_tpusim(cmd);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Catch::Contains(names));
  }
}
