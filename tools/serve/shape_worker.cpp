#include "tools/serve/shape_worker.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "tools/launch/fork_server.hpp"

namespace tpusim::serve {
namespace {

// A reply: its kind, then the seconds (kOk), the problems (kConfig: count, then each problem's
// where and what) or a message (kFailed); strings as a 32-bit length and the bytes.
enum Kind : std::uint32_t { kOk = 0, kConfig = 1, kFailed = 2 };
constexpr long long kQuit = -1;  // a request's batch that ends the worker

void put_raw(std::string& b, const void* p, std::size_t n) {
  b.append(static_cast<const char*>(p), n);
}
void put_u32(std::string& b, std::uint32_t v) { put_raw(b, &v, sizeof v); }
void put_str(std::string& b, const std::string& s) {
  put_u32(b, static_cast<std::uint32_t>(s.size()));
  b += s;
}

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  void raw(void* p, std::size_t n) {
    if (pos_ + n > b_.size()) throw std::runtime_error("tpusim serve: a step's reply is short");
    std::memcpy(p, b_.data() + pos_, n);
    pos_ += n;
  }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    raw(&v, sizeof v);
    return v;
  }
  std::string str() {
    const std::uint32_t n = u32();
    if (pos_ + n > b_.size()) throw std::runtime_error("tpusim serve: a step's reply is short");
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  const std::string& b_;
  std::size_t pos_ = 0;
};

bool write_all(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// Reads exactly n bytes; false at the end of the pipe.
bool read_all(int fd, void* p, std::size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

std::string read_to_end(int fd) {
  std::string got;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

// A reply of `f`'s result or error.
template <typename F>
std::string reply_of(const F& f) {
  std::string b;
  try {
    const double t = f();
    put_u32(b, kOk);
    put_raw(b, &t, sizeof t);
  } catch (const ConfigError& e) {
    b.clear();
    put_u32(b, kConfig);
    put_u32(b, static_cast<std::uint32_t>(e.problems().size()));
    for (const Problem& p : e.problems()) {
      put_str(b, p.where);
      put_str(b, p.what);
    }
  } catch (const std::exception& e) {
    b.clear();
    put_u32(b, kFailed);
    put_str(b, e.what());
  }
  return b;
}

std::string failure(const std::string& why) {
  std::string b;
  put_u32(b, kFailed);
  put_str(b, why);
  return b;
}

// Forks a child that simulates `shape` and returns its reply (a failure if it ended without
// one). The child closes the worker's pipes (`close_a`, `close_b`).
std::string in_child(const ShapeWorker::SimulateOne& simulate_one, const StepShape& shape,
                     int close_a, int close_b) {
  int fd[2];
  if (pipe(fd) != 0) return failure("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return failure("fork failed");
  }
  if (pid == 0) {
    prctl(PR_SET_NAME, "tpusim-step");
    close(fd[0]);
    close(close_a);
    close(close_b);
    launch::use_fresh_arena();
    const std::string b = reply_of([&] { return simulate_one(shape); });
    _exit(write_all(fd[1], b.data(), b.size()) ? 0 : 4);
  }
  close(fd[1]);
  std::string got = read_to_end(fd[0]);
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !got.empty()) return got;
  return failure(WIFSIGNALED(status) ? "no result (signal " + std::to_string(WTERMSIG(status)) + ")"
                                     : "no result");
}

}  // namespace

ShapeWorker::ShapeWorker(SimulateOne simulate_one) : simulate_one_(std::move(simulate_one)) {
  int req[2], rep[2];
  if (pipe(req) != 0) throw std::runtime_error("tpusim serve: pipe failed");
  if (pipe(rep) != 0) {
    close(req[0]);
    close(req[1]);
    throw std::runtime_error("tpusim serve: pipe failed");
  }
  pid_ = fork();
  if (pid_ < 0) {
    for (int f : {req[0], req[1], rep[0], rep[1]}) close(f);
    throw std::runtime_error("tpusim serve: fork failed");
  }
  if (pid_ == 0) {
    prctl(PR_SET_NAME, "tpusim-shapes");
    launch::use_warm_fresh_arena();  // the worker's own, made and grown once
    close(req[1]);
    close(rep[0]);
    to_worker_ = req[0];    // in the worker: where the requests come from
    from_worker_ = rep[1];  // and where the replies go
    serve_requests();
  }
  close(req[0]);
  close(rep[1]);
  to_worker_ = req[1];
  from_worker_ = rep[0];
}

void ShapeWorker::serve_requests() {
  for (;;) {
    long long r[4];
    if (!read_all(to_worker_, r, sizeof r) || r[1] == kQuit) _exit(0);
    const StepShape s{r[0] != 0, r[1], r[2], r[3]};
    const std::string b = in_child(simulate_one_, s, to_worker_, from_worker_);
    const std::uint32_t n = static_cast<std::uint32_t>(b.size());
    if (!write_all(from_worker_, &n, sizeof n) || !write_all(from_worker_, b.data(), b.size()))
      _exit(0);
  }
}

ShapeWorker::~ShapeWorker() {
  if (pid_ <= 0) return;
  const long long quit[4] = {0, kQuit, 0, 0};
  write_all(to_worker_, quit, sizeof quit);
  close(to_worker_);
  close(from_worker_);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

double ShapeWorker::simulate(const StepShape& s) {
  const long long r[4] = {s.decode ? 1 : 0, s.batch, s.tokens, s.kv};
  std::uint32_t n = 0;
  std::string b;
  if (write_all(to_worker_, r, sizeof r) && read_all(from_worker_, &n, sizeof n)) {
    b.resize(n);
    if (!read_all(from_worker_, b.data(), n)) b.clear();
  }
  if (b.empty()) throw std::runtime_error("tpusim serve: the step simulator process ended");
  Reader in(b);
  const std::uint32_t kind = in.u32();
  if (kind == kOk) {
    double t = 0;
    in.raw(&t, sizeof t);
    return t;
  }
  if (kind == kConfig) {
    std::vector<Problem> problems(in.u32());
    for (Problem& p : problems) {
      p.where = in.str();
      p.what = in.str();
    }
    throw ConfigError(std::move(problems));
  }
  throw std::runtime_error("tpusim serve: the simulation of a step failed: " + in.str());
}

}  // namespace tpusim::serve
