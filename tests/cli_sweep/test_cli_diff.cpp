// tpusim diff on real reports and real results tables.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tpusim.hpp"
#include "tools/sweep/csv_table.hpp"

using nlohmann::json;

namespace {
std::string diff_tmp(const std::string& name) {
  return "/tmp/tpusim_cli_diff_" + std::to_string(::getpid()) + "_" + name;
}
const std::string kCliDiffStudy = "configs/studies/maskrcnn_512.json";
}  // namespace

TEST_CASE(
    "diff of two reports: the step time difference as the reports give it, exit 1 past "
    "the tolerance") {
  auto a = run_tpusim({"run", kCliDiffStudy, "--json"});
  auto b = run_tpusim({"run", kCliDiffStudy, "--json", "--set", "hardware.ici.bandwidth_GBps=25"});
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  std::ofstream(diff_tmp("a.json")) << a.out;
  std::ofstream(diff_tmp("b.json")) << b.out;
  const json ja = json::parse(a.out), jb = json::parse(b.out);
  const double sa = ja["step_time_ms"].get<double>(), sb = jb["step_time_ms"].get<double>();
  REQUIRE(sb > sa);
  const double rel = (sb - sa) / sa;

  auto d = run_tpusim({"diff", diff_tmp("a.json"), diff_tmp("b.json"), "--json"});
  REQUIRE(d.exit_code == 0);  // no tolerance: a comparison, not a check
  const json j = json::parse(d.out);
  bool found = false;
  for (const auto& n : j["numbers"])
    if (n["where"] == "step_time_ms") {
      found = true;
      CHECK(n["absolute"].get<double>() == Approx(sb - sa));
      CHECK(n["relative"].get<double>() == Approx(rel));
    }
  CHECK(found);
  REQUIRE(j["inputs"].size() == 1);
  CHECK(j["inputs"][0]["where"] == "hardware.ici.bandwidth_GBps");
  // Largest relative difference first.
  for (std::size_t i = 1; i < j["numbers"].size(); ++i)
    if (!j["numbers"][i]["relative"].is_null() && !j["numbers"][i - 1]["relative"].is_null())
      CHECK(std::fabs(j["numbers"][i - 1]["relative"].get<double>()) >=
            std::fabs(j["numbers"][i]["relative"].get<double>()));

  // Tolerance: below the step's change fails, and the text names the step time.
  const std::string below = std::to_string(rel * 100 / 2) + "%";
  auto fail = run_tpusim({"diff", diff_tmp("a.json"), diff_tmp("b.json"), "--tolerance", below});
  CHECK(fail.exit_code == 1);
  CHECK_THAT(fail.out, Catch::Contains("step_time_ms"));
  CHECK_THAT(fail.err, Catch::Contains("beyond the tolerance"));
  auto same = run_tpusim({"diff", diff_tmp("a.json"), diff_tmp("a.json"), "--tolerance", "0"});
  CHECK(same.exit_code == 0);
  CHECK_THAT(same.out, Catch::Contains("0 numbers differ"));
  for (const char* f : {"a.json", "b.json"}) std::remove(diff_tmp(f).c_str());
}

TEST_CASE("diff of two results tables: a point 5 % slower fails 2 % and passes 10 %") {
  auto t = tpusim::sweep::read_csv(std::string(TPUSIM_SOURCE_DIR) +
                                   "/tests/golden/bert_weak_scaling.csv");
  auto slower = t;
  const double step = *slower.number(2, "step_time_ms");
  slower.rows[2][static_cast<std::size_t>(slower.column("step_time_ms"))] =
      tpusim::sweep::number_text(step * 1.05);
  tpusim::sweep::write_csv(diff_tmp("a.csv"), t);
  tpusim::sweep::write_csv(diff_tmp("b.csv"), slower);
  auto strict = run_tpusim({"diff", diff_tmp("a.csv"), diff_tmp("b.csv"), "--tolerance", "2%"});
  CHECK(strict.exit_code == 1);
  CHECK_THAT(strict.out, Catch::Contains("1 number differs"));
  CHECK_THAT(strict.out, Catch::Contains("+5.00%"));
  auto loose = run_tpusim({"diff", diff_tmp("a.csv"), diff_tmp("b.csv"), "--tolerance", "10%"});
  CHECK(loose.exit_code == 0);
  for (const char* f : {"a.csv", "b.csv"}) std::remove(diff_tmp(f).c_str());
}

TEST_CASE("diff bad input: one line, exit code 2") {
  std::ofstream(diff_tmp("x.json")) << "{\"a\": 1}";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"diff", diff_tmp("x.json"), diff_tmp("x.json")},
           {"diff", diff_tmp("x.json"), "tests/golden/bert_weak_scaling.csv"},
           {"diff", "tests/golden/bert_weak_scaling.csv", "tests/golden/bert_weak_scaling.csv",
            "--tolerance", "much"},
           {"diff", diff_tmp("missing.json"), diff_tmp("x.json")}}) {
    auto r = run_tpusim(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines() == 1);
  }
  std::remove(diff_tmp("x.json").c_str());
}
