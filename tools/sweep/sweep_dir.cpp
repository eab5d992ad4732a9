#include "tools/sweep/sweep_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/output_file.hpp"

namespace tpusim::cli {
namespace fs = std::filesystem;

SweepDirLock::~SweepDirLock() {
  if (fd_ >= 0) ::close(fd_);
}

SweepDirLock make_sweep_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "points", ec);
  if (ec) throw ConfigError("--out " + dir, "cannot create the directory: " + ec.message());
  // Two sweeps writing one directory would overwrite each other's points. Close-on-exec: the
  // point processes do not hold the lock after their parent is gone.
  const std::string lock_path = (fs::path(dir) / ".lock").string();
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw ConfigError("--out " + dir, "cannot open " + lock_path + ": " + std::strerror(errno));
  SweepDirLock lock(fd);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
    throw ConfigError(
        "--out " + dir,
        "another tpusim sweep, merge or plan is writing into this directory; wait for it "
        "to end or give another --out");
  // Temporary files of a run that was killed outright (its children's output, half-written
  // results): never results, so they go. One sweep at a time may use a directory.
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "points", ec))
    if (e.path().filename().string().find(".tmp") != std::string::npos) fs::remove(e.path(), ec);
  return lock;
}

void write_plan(const std::string& dir, const sweep::Plan& plan) {
  write_output_file(dir + "/sweep.json", plan.to_json().dump(1) + "\n");
}

sweep::Plan read_plan(const std::string& dir) {
  const std::string path = dir + "/sweep.json";
  if (!fs::exists(path))
    throw ConfigError(
        dir, "not a sweep directory (no sweep.json): give the --out of a tpusim sweep run");
  return sweep::Plan::from_json(read_json_file(path), path);
}

sweep::CsvTable write_results(const std::string& dir, const sweep::Plan& plan) {
  auto table = sweep::results_table(plan, plan.own_indices(), [&](const sweep::PlanPoint& p) {
    return sweep::read_outcome(dir, p.id);
  });
  sweep::write_csv(dir + "/results.csv", table);
  return table;
}

ResultsAppender::ResultsAppender(const std::string& dir, const sweep::Plan& plan)
    : dir_(dir), plan_(plan), rows_(plan) {
  sweep::CsvTable t;
  t.header = rows_.header();
  for (std::size_t idx : plan.own_indices()) {
    const sweep::PointOutcome o = sweep::read_outcome(dir, plan.points[idx].id);
    if (sweep::finished(o.state)) t.rows.push_back(rows_.add(plan.points[idx], o));
  }
  sweep::write_csv(dir + "/results.csv", t);
}

void ResultsAppender::append(std::size_t index) {
  const sweep::PlanPoint& p = plan_.points.at(index);
  sweep::append_csv_row(dir_ + "/results.csv", rows_.add(p, sweep::read_outcome(dir_, p.id)));
}

}  // namespace tpusim::cli
