#pragma once
// Starts tpusim commands in processes of their own without exec: a server process, forked while
// the calling process is small and has one thread, forks one child per command, and the child
// calls the command line's entry (tools/cli's main) with the command's arguments. A child so made
// skips what an exec'd `tpusim` pays before its command starts: the kernel's exec, the dynamic
// loader's relocations, the static initialisers (docs/benchmarks.md, "Points forked from a
// server, layouts on trial, layouts refused early"). `tpusim sweep` and `tpusim plan` run their
// points so (tools/sweep/sweep_runner.hpp).
//
// Each child: its own process group's member (the server's group: the terminal's Ctrl-C goes to
// the caller, which stops the children), stdin /dev/null, stdout and stderr to the given files,
// allocating from a fresh jemalloc arena (use_fresh_arena). The server dies with the caller and
// the children with the server (PR_SET_PDEATHSIG). The server reaps its children and reports each
// one's wait status, so the caller waits on the server, not with waitpid.
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpusim::launch {

/// The command line's entry: argv[0] is the program's name, argv[argc] is null; returns the exit
/// code.
using Entry = int (*)(int argc, char** argv);

class ForkServer {
 public:
  /// Forks the server. Call it while the process has one thread (the server keeps only the
  /// calling one) and is small (each child starts as a copy of the server). Flushes stdout and
  /// std::cout first, so that no child writes the caller's buffered output. Throws
  /// std::runtime_error if the system refuses a socket or a process.
  static std::unique_ptr<ForkServer> start(Entry entry);
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;
  /// Closes the server's socket (the server exits; a child still running is killed with it) and
  /// reaps the server.
  ~ForkServer();

  /// Starts `entry(argv)` in a new child; returns its pid. Throws std::runtime_error if the
  /// server could not fork (with the system's reason) or has ended.
  pid_t launch(const std::vector<std::string>& argv, const std::string& out_path,
               const std::string& err_path);

  /// A child that ended (its pid and wait status), waiting at most `timeout_ms` for one; none if
  /// none ended by then or a signal interrupted the wait. Throws std::runtime_error if the server
  /// has ended.
  std::optional<std::pair<pid_t, int>> wait(int timeout_ms);

 private:
  ForkServer(pid_t pid, int socket) : pid_(pid), socket_(socket) {}
  /// Reads one message from the server (blocking); false at its end.
  bool receive(long long (&message)[3]);
  pid_t pid_;
  int socket_;
  std::vector<std::pair<pid_t, int>> ended_;  ///< reported while launch waited for its reply
};

/// From now on the calling thread allocates from a jemalloc arena of its own, which has no memory
/// yet: what a forked child allocates comes on fresh transparent huge pages (tools/main.cpp's
/// malloc_conf), 2 MiB at a time, instead of 4 KiB copy-on-write copies of its parent's free
/// pages. Nothing without jemalloc (the tests, the sanitizer build, Python).
void use_fresh_arena();

/// use_fresh_arena, then one allocation from it: in a process that forks children, jemalloc's
/// paths that make and grow an arena bind their library calls there (lazily bound in
/// libjemalloc), not again in every child.
void use_warm_fresh_arena();

}  // namespace tpusim::launch
