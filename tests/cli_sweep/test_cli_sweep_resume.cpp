// Interrupting a sweep loses no finished point, and rerunning it redoes none of them.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "tests/cli/sweep_fixture.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// Starts `tpusim sweep ...` in the source tree as a child process; returns its pid.
pid_t start_sweep(const std::vector<std::string>& args) {
  std::fflush(nullptr);  // or the child would write the test's buffered output again
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(TPUSIM_SOURCE_DIR) != 0) _exit(127);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    std::vector<char*> argv{const_cast<char*>(TPUSIM_BIN), const_cast<char*>("sweep")};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(TPUSIM_BIN, argv.data());
    _exit(127);
  }
  return pid;
}

/// Finished point files (not studies, not errors) with their inode and modification time.
std::map<std::string, std::pair<ino_t, long>> finished_points(const std::string& out) {
  std::map<std::string, std::pair<ino_t, long>> files;
  if (!fs::exists(out + "/points")) return files;
  for (const auto& e : fs::directory_iterator(out + "/points")) {
    const std::string name = e.path().filename().string();
    if (name.size() != 21 || name.substr(16) != ".json") continue;  // <16 hex>.json
    struct stat st {};
    stat(e.path().c_str(), &st);
    files[name] = {st.st_ino, st.st_mtim.tv_sec * 1000000000L + st.st_mtim.tv_nsec};
  }
  return files;
}

}  // namespace

TEST_CASE("resume after a killed sweep redoes no finished point and loses none") {
  SweepScratch s;
  const auto sweep =
      s.write("s.json", {{"base", small_bert_study()},
                         {"axes",
                          {{{"path", "hardware.ici.bandwidth_GBps"},
                            {"values", {10, 20, 30, 40, 50, 60, 70, 80, 90, 100}}}}}});
  const std::string out = s.path("out");
  pid_t pid = start_sweep({sweep, "--out", out});
  // Kill the sweep outright (no chance to clean up) as soon as the first point is written.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (finished_points(out).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  const auto before = finished_points(out);
  REQUIRE(!before.empty());
  INFO(before.size() << " of 10 points finished before the kill");
  REQUIRE(before.size() < 10);

  auto r = run_tpusim({"sweep", sweep, "--out", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err,
             Catch::Contains(std::to_string(before.size()) + " of 10 points already finished"));
  const auto after = finished_points(out);
  CHECK(after.size() == 10);
  for (const auto& [name, stamp] : before) {
    REQUIRE(after.count(name));
    CHECK(after.at(name) == stamp);  // same file: not rewritten
  }
  const auto t = results_of(out);
  REQUIRE(t.rows.size() == 10);
  for (std::size_t row = 0; row < 10; ++row) CHECK(t.cell(row, "status") == "ok");
  // Nothing left behind by the killed run's children.
  for (const auto& e : fs::directory_iterator(out + "/points"))
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
}

TEST_CASE("Ctrl-C stops a sweep and keeps what finished") {
  SweepScratch s;
  const auto sweep = s.write("s.json", {{"base", small_bert_study()},
                                        {"axes",
                                         {{{"path", "hardware.ici.bandwidth_GBps"},
                                           {"values", {10, 20, 30, 40, 50, 60, 70, 80}}}}}});
  const std::string out = s.path("out");
  pid_t pid = start_sweep({sweep, "--out", out, "-j", "2"});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (finished_points(out).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  const auto kept = finished_points(out);
  CHECK(!kept.empty());
  if (kept.size() < 8) CHECK(WEXITSTATUS(status) == 1);
  const auto t = results_of(out);
  std::size_t ok = 0;
  for (std::size_t row = 0; row < t.rows.size(); ++row) {
    CHECK(t.cell(row, "status") != "failed");  // stopped points are pending, not failures
    ok += t.cell(row, "status") == "ok";
  }
  CHECK(ok == kept.size());
}
