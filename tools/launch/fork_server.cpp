#include "tools/launch/fork_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "core/output_file.hpp"

// jemalloc's control interface, when the executable links jemalloc (CMakeLists.txt's
// TPUSIM_JEMALLOC); null otherwise.
extern "C" int mallctl(const char*, void*, std::size_t*, void*, std::size_t) __attribute__((weak));

namespace tpusim::launch {
namespace {

// The server's messages: {kind, pid, value}. kStarted: the child of the last request (pid), or
// the fork's errno (pid -1). kEnded: a child's pid and wait status.
enum : long long { kStarted = 0, kEnded = 1 };
// A request: the stdout file, the stderr file and each argument, each ended by a NUL, in one
// datagram of at most this many bytes.
constexpr std::size_t kMaxRequest = 1 << 16;

bool send_message(int socket, long long kind, long long pid, long long value) {
  const long long m[3] = {kind, pid, value};
  for (;;) {
    const ssize_t n = ::send(socket, m, sizeof m, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(sizeof m)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

/// In the new child: becomes the command, never returns.
[[noreturn]] void become_command(Entry entry, pid_t server, const std::vector<std::string>& words,
                                 const sigset_t& old_mask) {
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != server) ::_exit(127);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &dfl, nullptr);
  // Each opened above 2 first: where the caller runs with stdin or stdout closed, a file opened
  // as 0 or 1 would otherwise be replaced by the next dup2 before it is moved.
  auto above_2 = [](int fd) {
    if (fd < 0 || fd > 2) return fd;
    const int moved = ::fcntl(fd, F_DUPFD, 3);
    ::close(fd);
    return moved;
  };
  const int out = above_2(::open(words[0].c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
  const int err = above_2(::open(words[1].c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
  const int in = above_2(::open("/dev/null", O_RDONLY));
  if (out < 0 || err < 0 || in < 0) ::_exit(127);
  ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(err, 2);
  for (int fd : {in, out, err}) ::close(fd);
  use_fresh_arena();
  renew_checked_stdout();  // its terminal test and buffer are this process's own
  std::vector<char*> argv;
  for (std::size_t i = 2; i < words.size(); ++i)
    argv.push_back(const_cast<char*>(words[i].c_str()));
  argv.push_back(nullptr);
  const int code = entry(static_cast<int>(argv.size() - 1), argv.data());
  // The command has written its files and checked stdout; what is left is flushed here. The
  // static destructors and exit handlers are not run: they tear down what the process is about
  // to lose anyway (2.5 ms of a small point's 20 ms, measured with perf stat over a sweep).
  std::cout.flush();
  std::fflush(nullptr);
  ::_exit(code);
}

/// The words of a request: out file, err file, then the arguments.
std::vector<std::string> request_words(const char* b, std::size_t n) {
  std::vector<std::string> words;
  for (std::size_t i = 0; i < n;) {
    const std::size_t len = ::strnlen(b + i, n - i);
    words.emplace_back(b + i, len);
    i += len + 1;
  }
  return words;
}

/// Reaps the children that ended and reports each; false if the caller is gone.
bool report_ended(int socket) {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return true;
    if (!send_message(socket, kEnded, pid, status)) return false;
  }
}

/// The server: forks a child per request and reports its pid, then its end. Exits when the caller
/// closes its end of the socket.
[[noreturn]] void serve(Entry entry, int socket) {
  ::setpgid(0, 0);
  prctl(PR_SET_NAME, "tpusim-points");
  sigset_t chld, old_mask;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, &old_mask);
  const int sfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) ::_exit(127);
  std::vector<char> buf(kMaxRequest);
  for (;;) {
    pollfd fds[2] = {{socket, POLLIN, 0}, {sfd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      ::_exit(127);
    }
    if (fds[1].revents) {
      signalfd_siginfo info;
      while (::read(sfd, &info, sizeof info) > 0) {
      }
      if (!report_ended(socket)) ::_exit(0);
    }
    if (!fds[0].revents) continue;
    const ssize_t n = ::recv(socket, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(0);  // the caller closed the socket (or is gone)
    const auto words = request_words(buf.data(), static_cast<std::size_t>(n));
    const pid_t server = ::getpid();
    const pid_t pid = words.size() >= 3 ? ::fork() : (errno = EINVAL, -1);
    if (pid == 0) {
      ::close(sfd);
      ::close(socket);
      become_command(entry, server, words, old_mask);
    }
    if (!send_message(socket, kStarted, pid, pid < 0 ? errno : 0)) ::_exit(0);
  }
}

}  // namespace

void use_fresh_arena() {
  if (mallctl == nullptr) return;
  unsigned arena = 0;
  std::size_t size = sizeof arena;
  if (mallctl("arenas.create", &arena, &size, nullptr, 0) != 0) return;
  if (mallctl("thread.arena", nullptr, nullptr, &arena, sizeof arena) != 0) return;
  mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
}

void use_warm_fresh_arena() {
  use_fresh_arena();
  void* volatile warm = std::malloc(1 << 16);
  std::free(warm);
}

std::unique_ptr<ForkServer> ForkServer::start(Entry entry) {
  std::cout.flush();
  std::fflush(nullptr);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    throw std::runtime_error(std::string("cannot make the points' socket: ") +
                             std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    throw std::runtime_error(std::string("cannot start the points' server: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::close(sv[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(0);
    use_warm_fresh_arena();
    serve(entry, sv[1]);
  }
  ::close(sv[1]);
  ::setpgid(pid, pid);  // as the server does itself: no terminal signal reaches it in between
  return std::unique_ptr<ForkServer>(new ForkServer(pid, sv[0]));
}

ForkServer::~ForkServer() {
  ::close(socket_);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

bool ForkServer::receive(long long (&m)[3]) {
  for (;;) {
    const ssize_t n = ::recv(socket_, m, sizeof m, 0);
    if (n == static_cast<ssize_t>(sizeof m)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

pid_t ForkServer::launch(const std::vector<std::string>& argv, const std::string& out_path,
                         const std::string& err_path) {
  std::string request;
  for (const std::string* w : {&out_path, &err_path}) request += *w + '\0';
  for (const auto& a : argv) request += a + '\0';
  if (request.size() > kMaxRequest)
    throw std::runtime_error("a point's command line is longer than " +
                             std::to_string(kMaxRequest) + " bytes");
  ssize_t sent = -1;
  do sent = ::send(socket_, request.data(), request.size(), MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  long long m[3];
  for (;;) {
    if (sent < 0 || !receive(m)) throw std::runtime_error("the points' server ended");
    if (m[0] == kStarted) break;
    ended_.emplace_back(static_cast<pid_t>(m[1]), static_cast<int>(m[2]));
  }
  if (m[1] < 0)
    throw std::runtime_error(std::string("cannot start a point's process: ") +
                             std::strerror(static_cast<int>(m[2])));
  return static_cast<pid_t>(m[1]);
}

std::optional<std::pair<pid_t, int>> ForkServer::wait(int timeout_ms) {
  if (ended_.empty()) {
    pollfd fd{socket_, POLLIN, 0};
    const int ready = ::poll(&fd, 1, timeout_ms);
    if (ready < 0 && errno != EINTR)
      throw std::runtime_error(std::string("cannot wait for the points: ") + std::strerror(errno));
    if (ready <= 0) return std::nullopt;
    long long m[3];
    if (!receive(m) || m[0] != kEnded) throw std::runtime_error("the points' server ended");
    ended_.emplace_back(static_cast<pid_t>(m[1]), static_cast<int>(m[2]));
  }
  const auto e = ended_.front();
  ended_.erase(ended_.begin());
  return e;
}

}  // namespace tpusim::launch
