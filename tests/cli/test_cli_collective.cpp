#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/bad_input.hpp"

TEST_CASE("tpusim collective --json reports time and bandwidths that agree with each other") {
  auto r = run_tpusim(
      {"collective", "--op", "all-reduce", "--bytes", "8MiB", "--topology", "4x4", "--json"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  const double bytes = 8.0 * 1024 * 1024;
  const double t = j["collective_time_ns"].get<double>() * 1e-9;
  CHECK(j["algbw_GBps"].get<double>() == Approx(bytes / t * 1e-9));
  const double n = j["cores"].get<double>();
  CHECK(j["busbw_GBps"].get<double>() == Approx(j["algbw_GBps"].get<double>() * 2 * (n - 1) / n));
  CHECK(j["chips"] == 16);
  CHECK(j["cores"] == 32);
  CHECK(j["events"].get<double>() > 0);
  CHECK(j["wall_s"].get<double>() >= 0);
}

TEST_CASE("the text report names the algorithm and the topology") {
  auto r = run_tpusim({"collective", "--op", "reduce-scatter", "--bytes", "1MiB", "--topology",
                       "8x8:wrap=0,1", "--algorithm", "bidirectional_ring"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("bidirectional_ring"));
  CHECK_THAT(r.out, Catch::Contains("8x8 (X open Y wraps)"));
}

TEST_CASE("bad collective input is one error line naming the value with exit code 2") {
  check_bad({"collective", "--op", "all-sum", "--bytes", "1MiB"}, "all-sum");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--algorithm", "tree"}, "tree");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--topology", "tpu_v9_pod"},
            "tpu_v9_pod");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "lots"}, "lots");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "0"}, "--bytes");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "-5MiB"}, "-5MiB");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "5XB"}, "XB");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--topology", "4x4", "--mesh",
             "data=64"},
            "parallelism");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--topology",
             "tests/data/malformed_topology.json"},
            "malformed_topology.json:1:");
  check_bad(
      {"collective", "--op", "all-reduce", "--bytes", "1MiB", "--set", "hardware.ici.speed=3"},
      "hardware.ici.speed");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--set",
             "hardware.ici.bandwidth_GBps=-3"},
            "hardware.ici.bandwidth_GBps");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--topology", "4x4",
             "--algorithm", "onchip"},
            "onchip");
}
