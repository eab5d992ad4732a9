#pragma once
// `tpusim run STUDY.json` as a library call: build the model's SPMD Program and play it on the
// simulated machine.
#include <string>
#include <vector>

namespace tpusim::cli {

struct RunArgs {
  std::string study;
  std::vector<std::string> sets;
  bool json = false;
  std::string timeline;
  std::string record_trace;
  int timeline_all_up_to = 64;
  std::string timeline_cores;  ///< --timeline-cores LIST ("0,17,100-103"); empty: the default
  int top = 10;
  bool allow_oom = false;
  std::string links_csv;
  std::string stats;        ///< --stats FILE: every module's statistics as JSON
  bool op_classes = false;  ///< --top given: also print the compute by op class
  std::string profile;      ///< --profile DIR (run) or --out DIR (profile): the op profile
  /// `tpusim profile`: print the profile's summary (or with --json the profile) instead of the
  /// run's report.
  bool profile_command = false;
  /// --program FILE: the compiled Program `tpusim plan` wrote for this study
  /// (traces/format/program_file.hpp), played instead of building it.
  std::string program;
};

/// Simulates the study and prints its report (text or JSON); writes the timeline, trace and
/// links CSV, statistics and op profile (DIR/profile.html and DIR/profile.json) asked for. Returns
/// the exit code: 1 when the program does not fit in HBM (without
/// --allow-oom), else 0. Throws ConfigError on bad input.
int run_study(const RunArgs& a);

}  // namespace tpusim::cli
