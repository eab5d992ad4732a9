// tpusim plot for a paper: times and shares from zero, other axes fitted with a break mark, no
// legend for one series, editable SVG text, PNG at a chosen resolution that records it, and the
// exposed communication share where collectives overlap compute.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>

#include "tests/cli/sweep_fixture.hpp"

using nlohmann::json;

namespace {

std::uint32_t be32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

struct PngInfo {
  std::uint32_t width = 0, height = 0, x_per_metre = 0, y_per_metre = 0;
  int unit = -1;
};

/// The header and the pHYs chunk of a PNG, read from its bytes.
PngInfo png_info(const std::string& png) {
  PngInfo p;
  REQUIRE(png.size() > 33);
  REQUIRE(png.compare(12, 4, "IHDR") == 0);
  p.width = be32(png, 16);
  p.height = be32(png, 20);
  for (std::size_t at = 8; at + 8 <= png.size();) {
    const std::uint32_t length = be32(png, at);
    if (png.compare(at + 4, 4, "pHYs") == 0) {
      p.x_per_metre = be32(png, at + 8);
      p.y_per_metre = be32(png, at + 12);
      p.unit = static_cast<unsigned char>(png[at + 16]);
    }
    at += 12 + length;
  }
  return p;
}

/// One series: the small BERT study at two ICI bandwidths.
std::string one_series_sweep(const SweepScratch& s, bool async) {
  json base = small_bert_study();
  if (async) base["hardware"] = {{"async_collectives", true}};
  return s.write(
      "s.json",
      {{"base", base},
       {"axes",
        {{{"name", "ici"}, {"path", "hardware.ici.bandwidth_GBps"}, {"values", {25, 100}}}}}});
}

/// The synchronous one-series sweep's folder, swept once per process: every case plots its
/// results.csv (plot writes only into its own --out).
const std::string& synchronous_sweep() {
  static const SweepScratch scratch;
  static const std::string out = [] {
    const auto r = run_tpusim(
        {"sweep", one_series_sweep(scratch, false), "-j", "2", "--out", scratch.path("out")});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return scratch.path("out");
  }();
  return out;
}

}  // namespace

TEST_CASE("plot for a paper: times from zero, other axes with a break, one series no legend") {
  SweepScratch s;
  const std::string csv = synchronous_sweep() + "/results.csv";
  auto p = run_tpusim({"plot", csv, "--out", s.path("plots")});
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  const json m = json::parse(slurp(s.path("plots/charts.json")));
  for (const char* name : {"step_time", "comm_share"}) {
    const json c = chart_named(m, name);
    INFO(name);
    REQUIRE(c.is_object());
    CHECK(c["y_axis"]["from"].get<double>() == 0);
    CHECK(c["y_axis"]["break"] == false);
    CHECK(c["legend"] == false);  // one series: the title says what it is
  }
  // Throughput is fitted to its values (which differ by a few per cent): an axis that starts
  // above zero is drawn with a break.
  const json rate = chart_named(m, "examples_per_chip");
  CHECK(rate["y_axis"]["from"].get<double>() > 0);
  CHECK(rate["y_axis"]["break"] == true);
  // --y-fitted fits the times too (and breaks their axis); it excludes --y-from-zero.
  auto fitted =
      run_tpusim({"plot", csv, "--out", s.path("fitted"), "--y", "step_time_ms", "--y-fitted"});
  REQUIRE(fitted.exit_code == 0);
  const json f = json::parse(slurp(s.path("fitted/charts.json")))["charts"][0];
  CHECK(f["y_axis"]["from"].get<double>() > 0);
  CHECK(f["y_axis"]["break"] == true);
  CHECK(run_tpusim({"plot", csv, "--out", s.path("x"), "--y-fitted", "--y-from-zero"}).exit_code ==
        2);
}

TEST_CASE("plot for a paper: SVG text is text, PNG at 300 dpi by default and at --dpi") {
  SweepScratch s;
  const std::string csv = synchronous_sweep() + "/results.csv";
  REQUIRE(run_tpusim({"plot", csv, "--out", s.path("p"), "--title", "T&x"}).exit_code == 0);
  const std::string svg = slurp(s.path("p/step_time.svg"));
  // The title, the axis labels and the ticks as <text> elements, escaped; no glyph outlines.
  CHECK_THAT(svg, Catch::Contains(">Step time against ici: T&amp;x</text>"));
  CHECK_THAT(svg, Catch::Contains(">step time (ms)</text>"));
  CHECK_THAT(svg, Catch::Contains("transform=\"rotate(-90.0"));
  CHECK_THAT(svg, !Catch::Contains("glyph"));
  // No legend: the drawing is 900 x 540 units; at 300 dpi 900 x 300 / 96 = 2812.5 pixels wide.
  const PngInfo hi = png_info(slurp(s.path("p/step_time.png")));
  CHECK(hi.width == 2813);
  CHECK(hi.height == static_cast<std::uint32_t>(std::ceil(540 * 300 / 96.0)));
  CHECK(hi.unit == 1);
  CHECK(hi.x_per_metre == static_cast<std::uint32_t>(std::lround(300 / 0.0254)));
  CHECK(hi.y_per_metre == hi.x_per_metre);
  REQUIRE(run_tpusim({"plot", csv, "--out", s.path("q"), "--dpi", "96"}).exit_code == 0);
  const PngInfo one = png_info(slurp(s.path("q/step_time.png")));
  CHECK(one.width == 900);
  CHECK(one.height == 540);
  CHECK(one.x_per_metre == static_cast<std::uint32_t>(std::lround(96 / 0.0254)));
  for (const char* bad : {"0", "5000", "nan"}) {
    auto r = run_tpusim({"plot", csv, "--out", s.path("r"), "--dpi", bad});
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Catch::Contains("--dpi"));
  }
}

TEST_CASE("plot for a paper: where collectives overlap compute, the exposed share is charted") {
  SweepScratch s;
  REQUIRE(run_tpusim({"sweep", one_series_sweep(s, true), "-j", "2", "--out", s.path("out")})
              .exit_code == 0);
  const auto t = results_of(s.path("out"));
  bool overlap = false;
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    overlap =
        overlap || *t.number(r, "exposed_communication_ms") < *t.number(r, "communication_ms");
  REQUIRE(overlap);
  auto p = run_tpusim({"plot", s.path("out/results.csv"), "--out", s.path("plots")});
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  const json m = json::parse(slurp(s.path("plots/charts.json")));
  CHECK(chart_named(m, "comm_share").is_null());
  const json e = chart_named(m, "exposed_comm_share");
  REQUIRE(e.is_object());
  CHECK(e["y_axis"]["from"].get<double>() == 0);
  // Each point: exposed communication over the step, from the CSV.
  const auto& ser = e["series"][0];
  REQUIRE(ser["y"].size() == t.rows.size());
  for (std::size_t i = 0; i < t.rows.size(); ++i)
    for (std::size_t r = 0; r < t.rows.size(); ++r)
      if (*t.number(r, "ici") == ser["x"][i].get<double>())
        CHECK(ser["y"][i].get<double>() ==
              Approx(*t.number(r, "exposed_communication_ms") / *t.number(r, "step_time_ms"))
                  .epsilon(1e-8));
  CHECK(std::filesystem::exists(s.path("plots/exposed_comm_share.svg")));
  // Synchronous collectives: the share of time with a collective in flight, as before.
  REQUIRE(run_tpusim({"plot", synchronous_sweep() + "/results.csv", "--out", s.path("plots2")})
              .exit_code == 0);
  const json m2 = json::parse(slurp(s.path("plots2/charts.json")));
  CHECK(chart_named(m2, "comm_share").is_object());
  CHECK(chart_named(m2, "exposed_comm_share").is_null());
}
