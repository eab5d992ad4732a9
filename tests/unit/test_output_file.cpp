// core/output_file: a regular file or new path is replaced atomically; a symlink, device or FIFO
// is written in place and keeps what it is; failures name the path and leave no temporary file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "core/errors.hpp"
#include "core/output_file.hpp"

namespace fs = std::filesystem;
using tpusim::check_output_path;
using tpusim::ConfigError;
using tpusim::write_output_file;

namespace {

struct Scratch {
  std::string dir;
  Scratch() {
    char tmpl[] = "/tmp/tpusim_output_test_XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return dir + "/" + name; }
  /// Names in the folder other than `keep` (a temporary file left behind would show here).
  std::vector<std::string> others(const std::vector<std::string>& keep) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (std::find(keep.begin(), keep.end(), name) == keep.end()) out.push_back(name);
    }
    return out;
  }
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("write_output_file writes a new path and replaces a regular file, keeping its mode") {
  Scratch s;
  write_output_file(s.path("a.csv"), "one\n");
  CHECK(read_all(s.path("a.csv")) == "one\n");
  ::chmod(s.path("a.csv").c_str(), 0600);
  write_output_file(s.path("a.csv"), "two\n");
  CHECK(read_all(s.path("a.csv")) == "two\n");
  struct stat st {};
  REQUIRE(::stat(s.path("a.csv").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(s.others({"a.csv"}).empty());
}

TEST_CASE("a symlink output writes its target and stays a symlink") {
  Scratch s;
  std::ofstream(s.path("target.json")) << "old";
  fs::create_symlink(s.path("target.json"), s.path("link.json"));
  write_output_file(s.path("link.json"), "new");
  CHECK(fs::is_symlink(s.path("link.json")));
  CHECK(read_all(s.path("target.json")) == "new");
  // A dangling symlink: the target is created, the link kept.
  fs::create_symlink(s.path("later.json"), s.path("dangling.json"));
  write_output_file(s.path("dangling.json"), "made");
  CHECK(fs::is_symlink(s.path("dangling.json")));
  CHECK(read_all(s.path("later.json")) == "made");
  CHECK(s.others({"target.json", "link.json", "later.json", "dangling.json"}).empty());
}

TEST_CASE("a FIFO output is written in place: its reader gets the bytes, the FIFO stays") {
  Scratch s;
  const std::string fifo = s.path("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  // The read end opened first (non-blocking open succeeds without a writer), so the writer's
  // open does not wait; the bytes fit in the pipe's buffer.
  const int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(rd >= 0);
  const std::string bytes(3000, 'x');
  check_output_path(fifo);  // does not open it, so does not block either
  write_output_file(fifo, bytes);
  std::string got(8192, '\0');
  const ssize_t n = ::read(rd, got.data(), got.size());
  ::close(rd);
  CHECK(n == static_cast<ssize_t>(bytes.size()));
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(s.others({"fifo"}).empty());
}

TEST_CASE("/dev/null as an output stays a character device") {
  check_output_path("/dev/null");
  write_output_file("/dev/null", std::string(100000, 'x'));
  struct stat st {};
  REQUIRE(::lstat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  for (const auto& e : fs::directory_iterator("/dev"))
    CHECK(e.path().filename().string().rfind("null.tmp", 0) == std::string::npos);
}

TEST_CASE("a full device (/dev/full, ENOSPC) is an error naming the path and the reason") {
  const std::string err = error_of([] { write_output_file("/dev/full", "bytes"); });
  CHECK_THAT(err, Catch::StartsWith("/dev/full: cannot write: ") &&
                      Catch::Contains(std::strerror(ENOSPC)));
  struct stat st {};
  REQUIRE(::lstat("/dev/full", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
}

TEST_CASE("check_output_path refuses what cannot be written, naming the option and the path") {
  Scratch s;
  CHECK_THAT(error_of([&] { check_output_path(s.path("no/such/x.json"), "--timeline"); }),
             Catch::StartsWith("--timeline " + s.path("no/such/x.json") + ": cannot write") &&
                 Catch::Contains("does not exist"));
  CHECK_THAT(error_of([&] { check_output_path(s.dir, "--links-csv"); }),
             Catch::Contains("is a folder"));
  std::ofstream(s.path("file")) << "x";
  CHECK_THAT(error_of([&] { check_output_path(s.path("file/x.csv")); }),
             Catch::Contains("cannot write") && Catch::Contains(s.path("file/x.csv")));
  CHECK(error_of([&] { check_output_path(s.path("new.json")); }).empty());
  CHECK(error_of([&] { check_output_path(s.path("file")); }).empty());
  // Nothing was created by the checks.
  CHECK(s.others({"file"}).empty());
}

TEST_CASE("a write that fails leaves no temporary file") {
  Scratch s;
  CHECK_THAT(error_of([&] { write_output_file(s.path("gone/x.csv"), "x"); }),
             Catch::StartsWith(s.path("gone/x.csv") + ": cannot write: "));
  CHECK_THAT(error_of([&] { write_output_file(s.dir, "x"); }), Catch::Contains("is a folder"));
  CHECK(s.others({}).empty());
}
