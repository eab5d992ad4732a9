#pragma once
// The in-process stage of `tpusim plan`: every candidate layout enumerated and checked
// (evaluate.hpp); the valid ones that fit, one per distinct Program, go on to simulation.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/plan/evaluate.hpp"
#include "tools/plan/explain.hpp"
#include "tools/plan/space.hpp"

namespace tpusim::cli {

/// A candidate that passed every check, with what the search needs.
struct Survivor {
  plan::Candidate candidate;
  CandidateCheck check;
  std::string id, label;
  bool is_study = false;
  std::vector<std::string> equivalents;  ///< labels of layouts with the same Program
};

struct CheckedSpace {
  std::vector<Survivor> survivors;
  Rejections rejected;
  std::size_t total = 0;         ///< candidates, the study's own included
  double smallest_oom_peak = 0;  ///< per core, of the layouts that do not fit (0: none)
  std::string smallest_oom_label;
  std::vector<plan::AxisPeaks> oom_peaks;  ///< per axis value, the smallest peak that did not fit
  std::string own_rejection;  ///< "CLASS: reason" if the study's own layout was rejected
};

/// What `plan` shows on a terminal while it checks the layouts: one line (layouts checked of
/// all, time elapsed, an estimate of what remains), redrawn in place at most five times a second
/// and erased at the end. Nothing when `terminal` is false (stderr piped).
class CheckProgress {
 public:
  CheckProgress(std::size_t total, bool terminal, std::FILE* out = stderr);
  ~CheckProgress();
  CheckProgress(const CheckProgress&) = delete;
  CheckProgress& operator=(const CheckProgress&) = delete;
  /// One more layout checked (any thread).
  void checked();

 private:
  std::size_t total_, done_ = 0;
  bool terminal_, drawn_ = false;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::mutex mutex_;
};

/// Identifies a layout's Program and peak (program_fingerprint): equal keys, one simulation.
std::string program_key(const CandidateCheck& c);

/// Counts `s` (whose check has a rejected_class) among `r`'s rejections; a layout that does not
/// fit also in the smallest peaks (`r`'s smallest_oom_peak and oom_peaks).
void reject(CheckedSpace& r, const Survivor& s);

/// Enumerates `space` over `base` (a resolved study), adds `own` (the study's layout; may be
/// null) if it is not among them, checks each candidate and keeps one per Program (the
/// study's own if it is among them; the others are listed with it and counted). Layouts other
/// than the study's own may be deferred (CandidateCheck::deferred): their Programs are built,
/// checked for fit and merged by the search. `jobs` threads
/// check candidates at the same time (plain C++ on read-only registries; the result is the same
/// for any number). With `terminal`, a CheckProgress line shows how far they are.
CheckedSpace check_space(const plan::SearchSpace& space, const nlohmann::json& base,
                         const plan::Candidate* own, int jobs = 1, bool terminal = false);

}  // namespace tpusim::cli
