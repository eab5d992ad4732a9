// tpusim plot draws real sweep results: files of the right formats, one colour per series.
#include <array>
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "tests/cli/png_pixels.hpp"
#include "tests/cli/sweep_fixture.hpp"

using nlohmann::json;

namespace {

// The first three colours of the plot's palette (Okabe-Ito), as 8-bit RGB.
const std::vector<std::array<int, 3>> kSeriesColours{{0, 115, 179}, {230, 158, 0}, {0, 158, 115}};

/// Which of kSeriesColours appear in the PNG.
std::set<std::size_t> colours_in(const std::string& png) {
  std::set<std::size_t> found;
  for (std::size_t k = 0; k < kSeriesColours.size(); ++k)
    if (png_has_colour(png, kSeriesColours[k])) found.insert(k);
  return found;
}

}  // namespace

TEST_CASE("plot writes SVG and PNG scaling curves with one line per series") {
  SweepScratch s;
  const auto sweep = s.write(
      "s.json",
      {{"base", small_bert_study()},
       {"axes",
        {{{"path", "topology"}, {"values", {"2x2", "4x2"}}},
         {{"name", "ici"}, {"path", "hardware.ici.bandwidth_GBps"}, {"values", {50, 100}}}}}});
  auto r = run_tpusim({"sweep", sweep, "-j", "2", "--out", s.path("out")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto p = run_tpusim({"plot", s.path("out/results.csv"), "--out", s.path("plots")});
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  CHECK_THAT(p.err, Catch::Contains("2 series"));
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
