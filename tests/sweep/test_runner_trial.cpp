// The sweep runner's points on trial (tools/sweep/sweep_runner.hpp, NextPoint::trial), as tpusim
// plan uses them: a trial's result is held until the feeder settles it; kept, it is written and
// reported after the points the feeder decided before it; dropped, its process is stopped and
// nothing of it is left. The points' processes run a stand-in command (forked from a real fork
// server) whose report is a JSON object with every field the runner checks.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tools/launch/fork_server.hpp"
#include "tools/sweep/columns.hpp"
#include "tools/sweep/results.hpp"
#include "tools/sweep/sweep_progress.hpp"
#include "tools/sweep/sweep_runner.hpp"

namespace fs = std::filesystem;
using tpusim::cli::NextPoint;

namespace {

/// The stand-in for `tpusim run STUDY --json`: waits until the study's "wait_for" file exists
/// ("forever": until killed), then prints a report of step "step".
int stand_in(int /*argc*/, char** argv) {
  std::ifstream in(argv[2]);
  const auto study = nlohmann::json::parse(in);
  if (study.value("forever", false))
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  const std::string wait_for = study.value("wait_for", "");
  while (!wait_for.empty() && !fs::exists(wait_for))
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  nlohmann::json report = {
      {"model", "stand-in"}, {"layout", "x"}, {"chips", 1}, {"cores", 1}, {"wall_s", 0.0}};
  for (const auto& c : tpusim::sweep::report_metric_columns()) report[c] = 0.0;
  report["step_time_ms"] = study["step"];
  std::cout << report.dump() << "\n";
  return 0;
}

struct Store {
  fs::path dir = fs::temp_directory_path() / ("tpusim_trial_" + std::to_string(::getpid()));
  tpusim::sweep::Plan plan;
  Store() {
    fs::remove_all(dir);
    fs::create_directories(dir / "points");
  }
  ~Store() { fs::remove_all(dir); }
  /// Adds point `id` whose stand-in study is `study`.
  std::size_t add(const std::string& id, const nlohmann::json& study) {
    std::ofstream(tpusim::sweep::study_file(dir.string(), id)) << study.dump();
    plan.points.push_back({plan.points.size(), id, {}});
    return plan.points.size() - 1;
  }
  /// Files of the store's points/ folder that name point `id`.
  int files_of(const std::string& id) const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir / "points"))
      n += e.path().filename().string().rfind(id + ".", 0) == 0 &&
           e.path().filename().string() != id + ".study.json";
    return n;
  }
};

/// The feeder's last answer: the trial `index` settled (`keep` or dropped), nothing more to run.
NextPoint settle_and_end(std::size_t index, bool keep) {
  NextPoint n;
  n.settled = index;
  n.keep = keep;
  n.done = true;
  return n;
}

/// Runs the store's points as `feed` gives them (its argument: how many times it was asked),
/// two at a time; returns the points on_finish saw, in order.
std::vector<std::size_t> run_fed(Store& s, const std::function<NextPoint(int)>& feed) {
  auto server = tpusim::launch::ForkServer::start(&stand_in);
  std::FILE* quiet = std::fopen("/dev/null", "w");
  tpusim::cli::SweepProgress progress(s.plan.points.size(), 0, false, quiet);
  std::vector<std::size_t> finished;
  int asked = 0;
  const auto summary = tpusim::cli::run_points_fed(
      s.plan, [&] { return feed(++asked); }, {s.dir.string(), 2, "run", server.get()}, progress,
      [&](std::size_t i) { finished.push_back(i); });
  std::fclose(quiet);
  CHECK_FALSE(summary.interrupted);
  CHECK(summary.failed == 0);
  return finished;
}

}  // namespace

TEST_CASE("sweep runner: a trial that ends first is held, then written when kept") {
  Store s;
  const std::string release = (s.dir / "release").string();
  const auto a = s.add("a", {{"step", 1.0}, {"wait_for", release}});
  const auto b = s.add("b", {{"step", 2.0}});
  bool held_unseen = false;
  const auto finished = run_fed(s, [&](int asked) -> NextPoint {
    if (asked == 1) return {a};
    if (asked == 2) return {b, false, true};  // b on trial
    if (asked == 3) {  // b has ended (a waits for the release): held, not written
      held_unseen = !fs::exists(tpusim::sweep::point_file(s.dir.string(), "b"));
      std::ofstream(release) << "go";
      return {};
    }
    return settle_and_end(b, true);  // a has ended: b is kept
  });
  CHECK(held_unseen);
  CHECK(finished == std::vector<std::size_t>{a, b});
  CHECK(fs::exists(tpusim::sweep::point_file(s.dir.string(), "b")));
  CHECK(s.files_of("b") == 1);  // its result, no process files
}

TEST_CASE("sweep runner: a dropped trial leaves nothing, running or ended") {
  for (const bool ended_first : {false, true}) {
    DYNAMIC_SECTION("the trial " << (ended_first ? "ended first" : "still runs")) {
      Store s;
      const std::string release = (s.dir / "release").string();
      const auto a = s.add("a", {{"step", 1.0}, {"wait_for", release}});
      const auto b = s.add("b", ended_first ? nlohmann::json{{"step", 2.0}}
                                            : nlohmann::json{{"step", 2.0}, {"forever", true}});
      const auto finished = run_fed(s, [&](int asked) -> NextPoint {
        if (asked == 1) return {a};
        if (asked == 2) {
          if (!ended_first) std::ofstream(release) << "go";
          return {b, false, true};
        }
        if (asked == 3 && ended_first) {
          std::ofstream(release) << "go";
          return {};
        }
        return settle_and_end(b, false);  // a has ended: b is dropped
      });
      CHECK(finished == std::vector<std::size_t>{a});
      CHECK(s.files_of("b") == 0);
      CHECK(s.files_of("a") == 1);
    }
  }
}
