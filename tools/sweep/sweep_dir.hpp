#pragma once
// Shared by `tpusim sweep` and `tpusim merge`: writing a sweep directory's plan and results.
#include <string>

#include "tools/sweep/results.hpp"

namespace tpusim::cli {

/// Holds DIR/.lock (flock, released when the object goes or the process ends, however it ends).
class SweepDirLock {
 public:
  explicit SweepDirLock(int fd) : fd_(fd) {}
  SweepDirLock(SweepDirLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  SweepDirLock(const SweepDirLock&) = delete;
  SweepDirLock& operator=(const SweepDirLock&) = delete;
  ~SweepDirLock();

 private:
  int fd_;
};

/// Creates DIR and DIR/points, takes the directory's lock (one sweep or merge at a time writes
/// into it) and removes temporary files a killed run left there. Throws ConfigError naming --out
/// if it cannot, or if another process holds the lock.
[[nodiscard]] SweepDirLock make_sweep_dir(const std::string& dir);
/// DIR/sweep.json (atomic).
void write_plan(const std::string& dir, const sweep::Plan& plan);
/// Reads DIR/sweep.json. Throws ConfigError if DIR holds no sweep.
sweep::Plan read_plan(const std::string& dir);
/// Rebuilds DIR/results.csv from the point files of the plan's own points; returns the table.
sweep::CsvTable write_results(const std::string& dir, const sweep::Plan& plan);

/// results.csv while a sweep runs: started with the rows of the points finished before (ok or
/// out of memory; each point file read once), then one whole row appended per point as it
/// finishes (a single write of the line), so the cost per point does not grow with the sweep and
/// the file holds whole rows of finished points, each once, whenever the sweep is stopped.
class ResultsAppender {
 public:
  /// Writes DIR/results.csv with the header and the rows of the finished points.
  ResultsAppender(const std::string& dir, const sweep::Plan& plan);
  /// Appends the row of point `index` (its point file is written).
  void append(std::size_t index);

 private:
  std::string dir_;
  const sweep::Plan& plan_;
  sweep::ResultsRows rows_;
};

}  // namespace tpusim::cli
