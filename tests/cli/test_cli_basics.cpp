#include <catch2/catch.hpp>

#include "tests/cli/run_tpusim.hpp"

TEST_CASE("tpusim params lists every hardware parameter with its unit") {
  auto r = run_tpusim({"params", "hardware.ici"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("hardware.ici.bandwidth_GBps  number, GB/s"));
}

TEST_CASE("an unknown subcommand is one error line and exit code 2") {
  auto r = run_tpusim({"no-such-command"});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
}
