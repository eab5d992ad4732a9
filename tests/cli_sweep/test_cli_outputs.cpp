// Output paths of every command (docs/cli.md, "Outputs"): a device, FIFO or symlink is written in
// place and never replaced; a path that cannot be written is refused before anything runs; a
// full disk and a failed write to stdout are one error line and exit code 2.
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "tests/cli/sweep_fixture.hpp"

namespace fs = std::filesystem;

namespace {

/// Runs `script` with sh in the source tree; its exit code.
int shell(const std::string& script) {
  const int status =
      std::system(("cd " + shell_quote(TPUSIM_SOURCE_DIR) + " && " + script).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool is_char_device(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

const std::vector<std::string> kCollective = {"collective", "--op",        "all-reduce",
                                              "--bytes",    "1MiB",        "--topology",
                                              "4",          "--algorithm", "ring"};

std::vector<std::string> collective_with(std::vector<std::string> extra) {
  std::vector<std::string> args = kCollective;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE("an output path that cannot be written is refused before the study is even read") {
  for (const char* option : {"--timeline", "--record-trace", "--links-csv"}) {
    auto r = run_tpusim({"run", "no_such_study.json", option, "/nonexistent-dir/out.json"});
    INFO(option << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Catch::Contains(std::string(option) + " /nonexistent-dir/out.json") &&
                          Catch::Contains("does not exist") && !Catch::Contains("no_such_study"));
  }
  auto r = run_tpusim(collective_with({"--links-csv", "/tmp"}));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--links-csv /tmp: cannot write: is a folder"));
}

TEST_CASE("/dev/null and /dev/stdout work as outputs and stay what they are") {
  SweepScratch s;
  const std::string study = s.write("study.json", small_bert_study());
  auto r = run_tpusim({"run", study, "--timeline", "/dev/null", "--links-csv", "/dev/null"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(is_char_device("/dev/null"));
  auto c = run_tpusim(collective_with({"--links-csv", "/dev/stdout"}));
  INFO(c.err);
  CHECK(c.exit_code == 0);
  CHECK(fs::is_symlink("/dev/stdout"));
  CHECK_THAT(c.out, Catch::Contains("link,bandwidth_GBps,bytes,busy_ms,utilization,transfers"));
}

TEST_CASE("a symlink output writes its target and stays a symlink") {
  SweepScratch s;
  std::ofstream(s.path("target.csv")) << "old\n";
  fs::create_symlink(s.path("target.csv"), s.path("links.csv"));
  auto r = run_tpusim(collective_with({"--links-csv", s.path("links.csv")}));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::is_symlink(s.path("links.csv")));
  CHECK_THAT(slurp(s.path("target.csv")), Catch::StartsWith("link,bandwidth_GBps"));
}

TEST_CASE("a FIFO output is written in place: a reading process gets the bytes") {
  SweepScratch s;
  const std::string fifo = s.path("links.fifo"), got = s.path("got.csv");
  REQUIRE(shell("mkfifo " + shell_quote(fifo)) == 0);
  std::string cmd = "(timeout 60 cat " + shell_quote(fifo) + " > " + shell_quote(got) + " &) && " +
                    shell_quote(TPUSIM_BIN);
  for (const auto& a : collective_with({"--links-csv", fifo})) cmd += " " + shell_quote(a);
  REQUIRE(shell(cmd + " > /dev/null") == 0);
  // cat ends when tpusim closes the FIFO; wait for its output to be complete.
  for (int i = 0; i < 100 && slurp(got).find("transfers") == std::string::npos; ++i)
    shell("sleep 0.1");
  CHECK_THAT(slurp(got), Catch::StartsWith("link,bandwidth_GBps"));
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("a report that cannot be written to stdout is one error line, not exit 0") {
  SweepScratch s;
  std::string cmd = shell_quote(TPUSIM_BIN);
  for (const auto& a : collective_with({"--json"})) cmd += " " + shell_quote(a);
  CHECK(shell(cmd + " > /dev/full 2> " + shell_quote(s.path("err"))) == 2);
  const std::string err = slurp(s.path("err"));
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  CHECK_THAT(err, Catch::StartsWith("tpusim: error: stdout: cannot write the output") &&
                      Catch::Contains(std::strerror(ENOSPC)));
}

TEST_CASE("a full disk is one error line and exit code 2, and leaves no temporary file") {
  SweepScratch s;
  auto r = run_tpusim(collective_with({"--links-csv", "/dev/full"}));
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains("/dev/full: cannot write: ") &&
                        Catch::Contains(std::strerror(ENOSPC)) &&
                        !Catch::Contains("internal error"));
  CHECK(is_char_device("/dev/full"));

  // A sweep's folder whose results file is on a full device (a symlink to /dev/full).
  const std::string sweep =
      s.write("s.json", {{"base", small_bert_study()},
                         {"axes", {{{"path", "topology"}, {"values", {"2x2", "4x2"}}}}}});
  fs::create_directories(s.path("out"));
  fs::create_symlink("/dev/full", s.path("out/results.csv"));
  auto w = run_tpusim({"sweep", sweep, "--out", s.path("out")});
  CHECK(w.exit_code == 2);
  CHECK_THAT(w.err, Catch::Contains(s.path("out/results.csv") + ": cannot write: ") &&
                        Catch::Contains(std::strerror(ENOSPC)) &&
                        !Catch::Contains("internal error"));
  fs::remove(s.path("out/results.csv"));
  REQUIRE(run_tpusim({"sweep", sweep, "--out", s.path("out")}).exit_code == 0);

  // plot: a chart file on a full device.
  fs::create_directories(s.path("plots"));
  fs::create_symlink("/dev/full", s.path("plots/step_time.svg"));
  auto p = run_tpusim({"plot", "--dpi", "96", s.path("out/results.csv"), "--out", s.path("plots")});
  CHECK(p.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains(s.path("plots/step_time.svg") + ": cannot write: ") &&
                        Catch::Contains(std::strerror(ENOSPC)));
  for (const char* dir : {"out", "out/points", "plots"})
    for (const auto& e : fs::directory_iterator(s.path(dir)))
      CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
}

TEST_CASE("sweep without --out writes under out/ of the current folder (which .gitignore holds)") {
  SweepScratch s;
  const std::string sweep = s.write(
      "tiny.json",
      {{"base", small_bert_study()}, {"axes", {{{"path", "topology"}, {"values", {"2x2"}}}}}});
  fs::create_directories(s.path("cwd"));
  const int code =
      std::system(("cd " + shell_quote(s.path("cwd")) + " && " + shell_quote(TPUSIM_BIN) +
                   " sweep " + shell_quote(sweep) + " > /dev/null 2>&1")
                      .c_str());
  CHECK(WIFEXITED(code));
  CHECK(WEXITSTATUS(code) == 0);
  CHECK(fs::exists(s.path("cwd/out/sweep_tiny/results.csv")));
  CHECK(!fs::exists(s.path("cwd/sweep_tiny")));
  CHECK_THAT(slurp(std::string(TPUSIM_SOURCE_DIR) + "/.gitignore"), Catch::Contains("/out/"));
}
