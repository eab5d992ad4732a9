#include "core/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <streambuf>
#include <vector>

#include "core/errors.hpp"

namespace tpusim {
namespace {

[[noreturn]] void fail(const std::string& path, int err) {
  throw ConfigError(path, std::string("cannot write: ") + std::strerror(err));
}

/// Writes all of `bytes` to `fd`; 0, or the errno of the failing write.
int write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

/// Writes, syncs (regular files only: a device or FIFO has nothing to sync) and closes `fd`;
/// 0 or the errno of the first failure. Closes `fd` in every case.
int finish(int fd, const std::string& bytes) {
  int err = write_all(fd, bytes);
  struct stat st {};
  if (err == 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  return err;
}

/// The temporary file beside `path`: NAME.tmp.PID, with NAME cut short enough that the whole stays
/// within the folder's longest file name (a 255-character NAME is a valid output).
std::string temporary_name(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string suffix = ".tmp." + std::to_string(::getpid());
  std::string name = p.filename().string();
  const std::string parent = p.parent_path().string();
  const long max = ::pathconf(parent.empty() ? "." : parent.c_str(), _PC_NAME_MAX);
  const std::size_t limit = max > 0 ? static_cast<std::size_t>(max) : 255;
  if (name.size() + suffix.size() > limit)
    name.resize(limit > suffix.size() ? limit - suffix.size() : 1);
  return (p.parent_path() / (name + suffix)).string();
}

/// A new path or a regular file: a temporary file in the same folder, renamed over the path.
/// After a crash the path holds the old bytes or the new, never half.
void write_replacing(const std::string& path, const std::string& bytes, const struct stat* old) {
  const std::string tmp = temporary_name(path);
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::open(tmp.c_str(), flags, 0644);
  if (fd < 0 && errno == EEXIST && ::unlink(tmp.c_str()) == 0)  // left by a killed process
    fd = ::open(tmp.c_str(), flags, 0644);
  if (fd < 0) fail(path, errno);
  if (old) (void)::fchmod(fd, old->st_mode & 07777);  // keep the mode of the file replaced
  int err = finish(fd, bytes);
  if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    fail(path, err);
  }
}

/// A FIFO opened for writing without blocking for ever: a reader has 2 s to open it (a plain
/// open would wait for one however long). Returns the descriptor (blocking again) or throws.
int open_fifo(const std::string& path) {
  for (int tries = 0; tries < 40; ++tries) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    if (errno != ENXIO) fail(path, errno);
    ::usleep(50000);
  }
  throw ConfigError(path, "cannot write: no process opened this FIFO for reading within 2 s");
}

/// A symlink, device or FIFO: opened through the path and written in place (O_TRUNC does
/// nothing to a device or FIFO; a symlink's target is truncated, or created if missing).
void write_in_place(const std::string& path, const std::string& bytes) {
  // The process's own stdout or stderr (/dev/stdout, /proc/self/fd/2, or what they point at):
  // written through the stream's descriptor, after what it already holds, rather than opened
  // again (which would truncate a file the shell redirected the stream to).
  struct stat target {};
  if (::stat(path.c_str(), &target) == 0)
    for (int stream : {1, 2}) {
      struct stat st {};
      if (::fstat(stream, &st) != 0 || st.st_dev != target.st_dev || st.st_ino != target.st_ino)
        continue;
      std::cout.flush();
      std::fflush(stream == 1 ? stdout : stderr);
      if (const int err = write_all(stream, bytes)) fail(path, err);
      return;
    }
  const int fd = S_ISFIFO(target.st_mode)
                     ? open_fifo(path)
                     : ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, errno);
  const int err = finish(fd, bytes);
  if (err != 0) fail(path, err);
}

/// std::cout's buffer under use_checked_stdout: 64 KiB (flushed at each line on a terminal, as
/// stdio does), written with write(2), the first failure's errno kept (later output is dropped:
/// the stream is broken).
class CheckedStdout : public std::streambuf {
 public:
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) buffer_.push_back(traits_type::to_char_type(c));
    if (buffer_.size() >= kSize || (terminal_ && c == '\n')) drain();
    return error_ ? traits_type::eof() : traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    buffer_.append(s, static_cast<std::size_t>(n));
    if (buffer_.size() >= kSize ||
        (terminal_ && std::char_traits<char>::find(s, static_cast<std::size_t>(n), '\n')))
      drain();
    return error_ ? 0 : n;
  }
  int sync() override {
    drain();
    return error_ ? -1 : 0;
  }

 private:
  static constexpr std::size_t kSize = 1 << 16;
  void drain() {
    if (error_ == 0 && !buffer_.empty()) error_ = write_all(1, buffer_);
    buffer_.clear();
  }
  std::string buffer_;
  int error_ = 0;
  const bool terminal_ = ::isatty(1) == 1;
};

CheckedStdout* g_stdout = nullptr;

std::string folder_of(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

}  // namespace

namespace {
/// The path a chain of symlinks ends at (`path` itself if it is none): a dangling link is written
/// through to its target, whose folder must then exist. Throws ConfigError (ELOOP) on a cycle.
std::string link_target(const std::string& path, const std::string& where) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat l {};
    if (::lstat(p.c_str(), &l) != 0 || !S_ISLNK(l.st_mode)) return p;
    std::vector<char> buf(static_cast<std::size_t>(PATH_MAX) + 1);
    const ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size() - 1);
    if (n < 0) fail(where, errno);
    const std::string target(buf.data(), static_cast<std::size_t>(n));
    p = !target.empty() && target[0] == '/' ? target : folder_of(p) + "/" + target;
  }
  fail(where, ELOOP);
}
}  // namespace

void check_output_path(const std::string& path, const std::string& option) {
  const std::string where = option.empty() ? path : option + " " + path;
  if (path.empty()) throw ConfigError(option, "is empty; a file name is allowed");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) {
    // A new file: through a dangling symlink, the file the link names is created.
    const std::string target = link_target(path, where);
    if (target != path) {
      check_output_path(target, where + " ->");
      return;
    }
  }
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      throw ConfigError(where, "cannot write: is a folder; a file path is allowed");
    if (::access(path.c_str(), W_OK) != 0) fail(where, errno);
    struct stat link {};
    const bool plain = ::lstat(path.c_str(), &link) == 0 && S_ISREG(link.st_mode);
    // Replacing a regular file creates a temporary file beside it.
    if (plain && ::access(folder_of(path).c_str(), W_OK | X_OK) != 0) fail(where, errno);
    return;
  }
  if (errno != ENOENT) fail(where, errno);
  const std::string folder = folder_of(path);
  struct stat dir {};
  if (::stat(folder.c_str(), &dir) != 0)
    throw ConfigError(where, "cannot write: the folder '" + folder + "' does not exist");
  if (!S_ISDIR(dir.st_mode))
    throw ConfigError(where, "cannot write: '" + folder + "' is not a folder");
  if (::access(folder.c_str(), W_OK | X_OK) != 0) fail(where, errno);
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  std::vector<std::pair<std::string, std::string>> seen;  // (canonical path, option)
  for (const auto& [option, path] : outputs) {
    // A device or FIFO (/dev/null for two outputs) is written in place, each output whole.
    struct stat st {};
    if (path.empty() || (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))) continue;
    std::error_code ec;
    std::string canon = std::filesystem::weakly_canonical(path, ec).string();
    if (ec) canon = path;
    for (const auto& [other, other_option] : seen)
      if (other == canon)
        throw ConfigError(option + " " + path, "is also the file of " + other_option +
                                                   "; allowed: a file of its own for each output");
    seen.emplace_back(canon, option);
  }
}

void write_output_file(const std::string& path, const std::string& bytes) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) fail(path, errno);
    write_replacing(path, bytes, nullptr);
  } else if (S_ISREG(st.st_mode)) {
    write_replacing(path, bytes, &st);
  } else if (S_ISDIR(st.st_mode)) {
    throw ConfigError(path, "cannot write: is a folder; a file path is allowed");
  } else {
    write_in_place(path, bytes);
  }
}

void use_checked_stdout() {
  if (g_stdout) return;
  // Never freed: std::cout flushes through it until the very end of the process.
  g_stdout = new CheckedStdout;
  std::cout.rdbuf(g_stdout);
}

void renew_checked_stdout() {
  g_stdout = nullptr;
  use_checked_stdout();
}

void check_stdout() {
  std::cout.flush();
  errno = 0;
  const bool cxx_failed = !std::cout || (g_stdout && g_stdout->error() != 0);
  const bool c_failed = std::fflush(stdout) != 0 || std::ferror(stdout);
  if (!cxx_failed && !c_failed) return;
  const int err = g_stdout && g_stdout->error() != 0 ? g_stdout->error() : errno;
  std::cout.clear();
  std::clearerr(stdout);
  throw ConfigError("stdout", std::string("cannot write the output: ") +
                                  (err != 0 ? std::strerror(err) : "a write failed"));
}

}  // namespace tpusim
