#pragma once
// The house rule for bad input, checked on a finished tpusim run: exit code 2 and one line on
// stderr that names the value or path (`named`).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/cli/run_tpusim.hpp"

inline void check_bad_input(const TpusimResult& r, const std::string& named) {
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains(named));
}

/// Runs tpusim with `args` and checks the house rule on it, and that nothing went to stdout.
inline void check_bad(const std::vector<std::string>& args, const std::string& named) {
  const auto r = run_tpusim(args);
  check_bad_input(r, named);
  CHECK(r.out.empty());
}
