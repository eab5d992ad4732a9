// Issue 51: results tables, goldens, merges and plots against hostile inputs. Each refused input is
// exit 2 with one line naming the file position or option and what is allowed.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "tests/cli_hostile/hostile.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

/// A results table of `n` ok points in one series, x = 1..n, step times 1..n ms.
std::string table_of(int n, const std::string& series) {
  std::string t = "point,id,status,x,series,chips,step_time_ms\n";
  for (int k = 0; k < n; ++k)
    t += std::to_string(k) + ",i" + std::to_string(k) + ",ok," + std::to_string(k + 1) + "," +
         series + ",16," + std::to_string(k + 1) + "\n";
  return t;
}

}  // namespace

TEST_CASE("issue 51: plot refuses inf in a metric (was SIGSEGV) and as x (was bad_alloc)") {
  SweepScratch s;
  auto r = run_tpusim({"plot", hostile_fixture("plot_inf.csv"), "--out", s.path("p")});
  check_bad_input(r, "plot_inf.csv:3");
  CHECK_THAT(r.err, Catch::Contains("column step_time_ms: 'inf' is not a finite number"));
  r = run_tpusim({"plot", hostile_fixture("plot_x_inf.csv"), "--out", s.path("px")});
  check_bad_input(r, "plot_x_inf.csv:3");
  CHECK_THAT(r.err, Catch::Contains("column x: 'inf'"));
  // -inf, nan and a number past a double (1e999), in any metric, the same way.
  for (const char* bad : {"-inf", "nan", "1e999", "NaN"}) {
    std::string t = table_of(2, "s");
    t.replace(t.rfind(",2\n"), 3, std::string(",") + bad + "\n");
    write_text(s.path("t.csv"), t);
    check_bad_input(run_tpusim({"plot", s.path("t.csv"), "--out", s.path("pt")}), bad);
  }
}

TEST_CASE("issue 51: plot of more series than kMaxPlotSeries is refused, not exit 3") {
  SweepScratch s;
  std::string t = "point,id,status,x,series,chips,step_time_ms\n";
  for (int k = 0; k < 2002; ++k)  // 1001 series of two points each
    t += std::to_string(k) + ",i" + std::to_string(k) + ",ok," + std::to_string(k % 2 + 1) + ",s" +
         std::to_string(k / 2) + ",16," + std::to_string(k + 1) + "\n";
  write_text(s.path("many.csv"), t);
  const auto r = run_tpusim({"plot", "--dpi", "96", s.path("many.csv"), "--out", s.path("p")});
  check_bad_input(r, "kMaxPlotSeries");
  CHECK_THAT(r.err, Catch::Contains("1001 series"));
  CHECK(!fs::exists(s.path("p")));
}

TEST_CASE("issue 51: a 100,000-character series label is drawn cut, kept whole in charts.json") {
  SweepScratch s;
  const std::string label(100000, 'y');
  write_text(s.path("long.csv"), table_of(2, label));
  const auto r = run_tpusim({"plot", "--dpi", "96", s.path("long.csv"), "--out", s.path("p")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json charts = json::parse(slurp(s.path("p/charts.json")));
  CHECK(charts["charts"][0]["series"][0]["label"] == label);
  CHECK(fs::file_size(s.path("p/step_time.svg")) < 100000);  // the label is not all in it
}

TEST_CASE("issue 51: plot lists each chart once (peak_memory was listed twice)") {
  SweepScratch s;
  write_text(s.path("m.csv"),
             "point,id,status,x,series,chips,step_time_ms,peak_memory_GiB\n"
             "0,a,ok,1,s,16,1.5,3\n1,b,ok,2,s,16,2,4\n");
  const auto r = run_tpusim({"plot", "--dpi", "96", s.path("m.csv"), "--out", s.path("p")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::multiset<std::string> files;
  const json charts = json::parse(slurp(s.path("p/charts.json")));
  for (const auto& c : charts["charts"]) files.insert(c["file"].get<std::string>());
  CHECK(files.count("peak_memory") == 1);
  CHECK(files.count("step_time") == 1);
}

TEST_CASE("issue 51: plot refuses a table past kMaxPlotRows before drawing") {
  SweepScratch s;
  write_text(s.path("big.csv"), table_of(20001, "s"));
  check_bad_input(run_tpusim({"plot", s.path("big.csv"), "--out", s.path("p")}), "kMaxPlotRows");
}

TEST_CASE("issue 51: goldens and tables with non-finite numbers or a point twice are refused") {
  SweepScratch s;
  const auto sweep = bandwidth_sweep(s, {25, 50});
  const std::string out = s.path("out");
  auto r = run_tpusim({"sweep", sweep, "--out", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // inf, -inf and 1e999 in the golden passed `--check` ("all points match"): now refused.
  for (const char* bad : {"inf", "-inf", "1e999"}) {
    write_text(s.path("golden.csv"), table_with(out, 1, "step_time_ms", bad));
    r = run_tpusim({"sweep", sweep, "--out", out, "--check", s.path("golden.csv")});
    check_bad_input(r, "golden.csv:3");
    CHECK_THAT(r.err, Catch::Contains(std::string("'") + bad + "' is not a finite number"));
  }
  // A point twice, the first copy far off: neither copy wins, in --check and in diff.
  tpusim::sweep::CsvTable t = results_of(out);
  auto first = t.rows[0];
  first[static_cast<std::size_t>(t.column("step_time_ms"))] = "999";
  t.rows.insert(t.rows.begin(), first);
  write_text(s.path("dup.csv"), tpusim::sweep::to_csv_text(t));
  r = run_tpusim({"sweep", sweep, "--out", out, "--check", s.path("dup.csv")});
  check_bad_input(r, "allowed: each point once");
  CHECK_THAT(r.err, Catch::Contains("dup.csv:3"));
  r = run_tpusim({"diff", out + "/results.csv", s.path("dup.csv"), "--tolerance", "1%"});
  check_bad_input(r, "allowed: each point once");
}

TEST_CASE("issue 51: diff --tolerance \"\" is refused, not a diff without a check") {
  SweepScratch s;
  const std::string golden = std::string(TPUSIM_SOURCE_DIR) + "/tests/golden/bert_weak_scaling.csv";
  check_bad({"diff", golden, golden, "--tolerance", ""}, "--tolerance");
  // Without --tolerance the diff only shows: exit 0.
  CHECK(run_tpusim({"diff", golden, golden}).exit_code == 0);
}

TEST_CASE("issue 51: merge refuses two results for one point, a negative step time is no result") {
  SweepScratch s;
  const auto sweep = bandwidth_sweep(s, {25, 50});
  for (const char* shard : {"1/2", "2/2"}) {
    const auto r = run_tpusim(
        {"sweep", sweep, "--shard", shard, "--out", s.path(std::string("sh") + shard[0])});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  fs::copy(s.path("sh1"), s.path("sh1b"), fs::copy_options::recursive);
  std::string point;
  for (const auto& e : fs::directory_iterator(s.path("sh1b/points"))) {
    const std::string name = e.path().filename().string();
    if (name.size() == 21 && name.substr(16) == ".json") point = e.path().string();
  }
  REQUIRE(!point.empty());
  json doc = json::parse(slurp(point));
  // The same point with another step time in the third directory: refused, nothing merged.
  doc["report"]["step_time_ms"] = doc["report"]["step_time_ms"].get<double>() * 2;
  write_text(point, doc.dump());
  auto r =
      run_tpusim({"merge", s.path("sh1"), s.path("sh2"), s.path("sh1b"), "--out", s.path("m")});
  check_bad_input(r, "allowed: one result per point");
  CHECK(!fs::exists(s.path("m/results.csv")));
  // A negative step time is a damaged file, not a result: the other copy is merged, as ok.
  doc["report"]["step_time_ms"] = -5;
  write_text(point, doc.dump());
  r = run_tpusim({"merge", s.path("sh1"), s.path("sh2"), s.path("sh1b"), "--out", s.path("m")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // ... and not silently: a warning names the damaged file.
  CHECK_THAT(r.err, Catch::Contains("warning: " + point + " holds no result"));
  const auto merged = results_of(s.path("m"));
  REQUIRE(merged.rows.size() == 2);
  for (std::size_t k = 0; k < 2; ++k) {
    CHECK(merged.cell(k, "status") == "ok");
    CHECK(*merged.number(k, "step_time_ms") > 0);
  }
}

TEST_CASE("issue 51: a sweep appends a row per point, after a kill results.csv holds whole rows") {
  SweepScratch s;
  const auto sweep = bandwidth_sweep(s, {10, 20, 30, 40, 50, 60, 70, 80});
  const std::string out = s.path("out");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(TPUSIM_SOURCE_DIR) != 0) _exit(127);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execl(TPUSIM_BIN, TPUSIM_BIN, "sweep", sweep.c_str(), "--out", out.c_str(), (char*)nullptr);
    _exit(127);
  }
  // Kill the sweep outright once results.csv holds two rows: they were appended (a rebuild would
  // list the pending points too).
  auto rows = [&] {
    std::ifstream in(out + "/results.csv");
    std::string line;
    int n = -1;
    while (std::getline(in, line)) ++n;
    return n;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (rows() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  const auto killed = results_of(out);
  REQUIRE(killed.rows.size() >= 2);
  REQUIRE(killed.rows.size() < 8);
  std::set<std::string> ids;
  for (std::size_t r = 0; r < killed.rows.size(); ++r) {
    CHECK(killed.cell(r, "status") == "ok");
    CHECK(killed.number(r, "step_time_ms"));
    CHECK(fs::exists(out + "/points/" + killed.cell(r, "id") + ".json"));
    CHECK(ids.insert(killed.cell(r, "id")).second);
  }
  // Resumed, the sweep ends with every point in order, each once.
  const auto r = run_tpusim({"sweep", sweep, "--out", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto done = results_of(out);
  REQUIRE(done.rows.size() == 8);
  for (std::size_t k = 0; k < 8; ++k) CHECK(done.cell(k, "point") == std::to_string(k));
}
