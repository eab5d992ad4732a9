// Determinism: the same input gives byte-identical output, apart from the wall-clock fields
// (wall_s, elaboration_s, memory.analysis_s), whether run twice or with a different number of sweep
// jobs.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/sweep_fixture.hpp"

namespace {
/// The report text with the wall-clock fields removed, as printed (dump keeps key order).
std::string without_wall_clock(const std::string& report) {
  auto j = nlohmann::json::parse(report);
  j.erase("wall_s");
  j.erase("elaboration_s");
  if (j.contains("memory")) j["memory"].erase("analysis_s");
  return j.dump(2);
}
/// results.csv without its wall_s column.
std::string csv_without_wall_clock(const std::string& path) {
  auto table = tpusim::sweep::read_csv(path);
  const int c = table.column("wall_s");
  REQUIRE(c >= 0);
  std::string out;
  for (const auto& row : table.rows) {
    for (int i = 0; i < static_cast<int>(row.size()); ++i)
      if (i != c) out += row[i] + ",";
    out += "\n";
  }
  return out;
}
}  // namespace

TEST_CASE("the same study twice gives the same report and the same timeline, byte for byte") {
  SweepScratch s;
  const std::string study = s.write("study.json", small_bert_study());
  std::string reports[2], timelines[2];
  for (int i = 0; i < 2; ++i) {
    const std::string timeline = s.path("timeline" + std::to_string(i) + ".json");
    auto r = run_tpusim({"run", study, "--json", "--timeline", timeline});
    REQUIRE(r.exit_code == 0);
    reports[i] = without_wall_clock(r.out);
    timelines[i] = slurp(timeline);
  }
  CHECK(reports[0] == reports[1]);
  CHECK(!timelines[0].empty());
  CHECK(timelines[0] == timelines[1]);
}

TEST_CASE("a sweep gives the same results with -j 1 and -j 2") {
  SweepScratch s;
  const std::string study = s.write("study.json", small_bert_study());
  const std::string sweep =
      s.write("sweep.json",
              {{"base", "study.json"},
               {"axes", {{{"path", "hardware.ici.bandwidth_GBps"}, {"values", {50, 100, 200}}}}}});
  std::string csv[2];
  for (int j = 1; j <= 2; ++j) {
    const std::string out = s.path("out" + std::to_string(j));
    auto r = run_tpusim({"sweep", sweep, "-j", std::to_string(j), "--out", out});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    csv[j - 1] = csv_without_wall_clock(out + "/results.csv");
  }
  CHECK(csv[0] == csv[1]);
}

TEST_CASE("a timeline does not depend on the name of the file it is written to") {
  // The arguments' lengths move the heap; nothing in the timeline may follow addresses.
  SweepScratch s;
  const std::string study = s.write("study.json", small_bert_study());
  std::string timelines[2];
  const std::string names[2] = {"t.json", "a_much_longer_name_for_the_same_timeline_file.json"};
  for (int i = 0; i < 2; ++i) {
    auto r = run_tpusim({"run", study, "--timeline", s.path(names[i])});
    REQUIRE(r.exit_code == 0);
    timelines[i] = slurp(s.path(names[i]));
  }
  CHECK(!timelines[0].empty());
  CHECK(timelines[0] == timelines[1]);
}
