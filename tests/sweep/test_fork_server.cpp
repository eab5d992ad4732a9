// The fork server the sweep and plan points start from (tools/launch/fork_server.hpp): each child
// runs the entry with its arguments, its stdout and stderr in its files; the server reports each
// child's wait status, including one killed by a signal; output the caller had buffered is not
// written again by the children; a caller without stdin still gives each child its files.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "tools/launch/fork_server.hpp"

namespace {

/// The children's command: prints its arguments to stdout, "err" to stderr; `sleep` waits
/// until killed; returns the number of arguments as its exit code.
int echo_entry(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) std::cout << (i ? " " : "") << argv[i];
  std::cout << "\n";
  std::cerr << "err\n";
  if (argc > 1 && std::string(argv[1]) == "sleep")
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  return argc;
}

std::string text_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Waits (up to 10 s) for the child `pid`, keeping the others' statuses in `ended`.
int wait_for(tpusim::launch::ForkServer& server, pid_t pid, std::map<pid_t, int>& ended) {
  for (int i = 0; i < 100 && !ended.count(pid); ++i)
    if (const auto e = server.wait(100)) ended[e->first] = e->second;
  REQUIRE(ended.count(pid) == 1);
  return ended.at(pid);
}

}  // namespace

TEST_CASE("fork server: children run the entry with their arguments and files") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tpusim_fork_server_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::cout << "buffered by the caller";  // not flushed: start() must flush it, once
  auto server = tpusim::launch::ForkServer::start(&echo_entry);
  std::map<pid_t, int> ended;
  std::map<pid_t, int> argc_of;
  for (int n = 1; n <= 3; ++n) {
    std::vector<std::string> argv{"prog"};
    for (int i = 1; i < n; ++i) argv.push_back("a" + std::to_string(i));
    const auto out = dir / ("out" + std::to_string(n)), err = dir / ("err" + std::to_string(n));
    argc_of[server->launch(argv, out.string(), err.string())] = n;
  }
  for (const auto& [pid, n] : argc_of) {
    const int status = wait_for(*server, pid, ended);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == n);
    std::string expected = "prog";
    for (int i = 1; i < n; ++i) expected += " a" + std::to_string(i);
    CHECK(text_of(dir / ("out" + std::to_string(n))) == expected + "\n");
    CHECK(text_of(dir / ("err" + std::to_string(n))) == "err\n");
  }

  // A child killed by a signal is reported as such.
  const pid_t sleeper =
      server->launch({"prog", "sleep"}, (dir / "out_s").string(), (dir / "err_s").string());
  ::kill(sleeper, SIGTERM);
  const int status = wait_for(*server, sleeper, ended);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);

  // A child whose stdout cannot be opened ends with 127 before the entry runs.
  const pid_t lost =
      server->launch({"prog"}, (dir / "no" / "such" / "out").string(), (dir / "err_l").string());
  const int lost_status = wait_for(*server, lost, ended);
  REQUIRE(WIFEXITED(lost_status));
  CHECK(WEXITSTATUS(lost_status) == 127);
  server.reset();  // the server exits when its socket closes; the destructor reaps it
  std::filesystem::remove_all(dir);
}

TEST_CASE("fork server: a child's stdout is its file when the caller has no stdin") {
  // Opened with fd 0 free, the child's stdout file would be fd 0, which the child's own stdin
  // (/dev/null) must not replace.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tpusim_fork_server_in_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const int saved = ::dup(0);
  REQUIRE(saved >= 0);
  ::close(0);
  auto server = tpusim::launch::ForkServer::start(&echo_entry);  // its socket may be fd 0 now
  std::map<pid_t, int> ended;
  const pid_t pid = server->launch({"prog", "x"}, (dir / "out").string(), (dir / "err").string());
  const int status = wait_for(*server, pid, ended);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(text_of(dir / "out") == "prog x\n");
  CHECK(text_of(dir / "err") == "err\n");
  server.reset();
  ::dup2(saved, 0);  // stdin back, once the server's socket is closed
  ::close(saved);
  std::filesystem::remove_all(dir);
}
