#pragma once
// Helpers of the issue-51 tests: a shell command run in the source tree (pipes, prlimit, /dev/full)
// with its exit code and output, and a sweep of two small points.
#include <sys/wait.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/bad_input.hpp"
#include "tests/cli/run_tpusim.hpp"
#include "tests/cli/sweep_fixture.hpp"

/// Checks a bound on the peak memory of the runs so far (not under AddressSanitizer).
inline void check_peak_rss_below(double mib) {
  if (kAddressSanitizer)
    WARN("peak RSS " << peak_child_rss_mib() << " MiB under AddressSanitizer: not checked");
  else
    CHECK(peak_child_rss_mib() < mib);
}

/// A fixture of tests/data/hostile/ (copied from ../shared/hostile-inputs, which CI does not have).
inline std::string hostile_fixture(const std::string& name) {
  return std::string(TPUSIM_SOURCE_DIR) + "/tests/data/hostile/" + name;
}

/// Runs `script` with sh in the source tree, TPUSIM set to the binary; stdout and stderr are kept
/// in files of `dir` and returned. The exit code is the script's (128 + N for a signal).
inline TpusimResult run_shell(const std::string& dir, const std::string& script) {
  const std::string cmd = "cd " + shell_quote(TPUSIM_SOURCE_DIR) +
                          " && TPUSIM=" + shell_quote(TPUSIM_BIN) + " sh -c " +
                          shell_quote(script) + " >" + dir + "/sh.out 2>" + dir + "/sh.err";
  const int status = std::system(cmd.c_str());
  TpusimResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(dir + "/sh.out");
  r.err = slurp(dir + "/sh.err");
  return r;
}

/// A sweep file of `values` ICI bandwidths over the small BERT study (well under a second each).
inline std::string bandwidth_sweep(const SweepScratch& s, const nlohmann::json& values) {
  return s.write("sweep.json",
                 {{"base", small_bert_study()},
                  {"axes", {{{"path", "hardware.ici.bandwidth_GBps"}, {"values", values}}}}});
}

/// results.csv of `out` with the cell of column `column` in data row `row` (0 first) replaced.
inline std::string table_with(const std::string& out, std::size_t row, const std::string& column,
                              const std::string& value) {
  tpusim::sweep::CsvTable t = tpusim::sweep::read_csv(out + "/results.csv");
  t.rows.at(row).at(static_cast<std::size_t>(t.column(column))) = value;
  return tpusim::sweep::to_csv_text(t);
}
