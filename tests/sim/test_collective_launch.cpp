// A collective op pays hardware.calibration.collective_launch_ns once, before its first step,
// whatever its size and algorithm; a program of k collectives pays it k times.
#include <catch2/catch.hpp>

#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
Config line_of_4(double launch_ns) {
  return config_with(
      {{"hardware",
        {{"cores_per_chip", 1}, {"calibration", {{"collective_launch_ns", launch_ns}}}}},
       {"topology", "4:wrap=0"},
       {"collectives",
        {{"algorithm", "ring"}, {"reduction_compute", false}, {"dma_hbm_traffic", false}}}});
}
}  // namespace

TEST_CASE("a collective op pays its launch cost once and two ops pay it twice") {
  const double launch_ns = 5000;
  for (double S : {1024.0, 1024.0 * 1024}) {
    Program one = one_op(4, collective_op(CollectiveKind::AllReduce, S));
    Program two = one;
    two.ops.push_back(collective_op(CollectiveKind::AllReduce, S));
    two.ops[1].deps = {0};
    const double base1 = simulate_child(one, line_of_4(0)).step_s;
    const double base2 = simulate_child(two, line_of_4(0)).step_s;
    CHECK(simulate_child(one, line_of_4(launch_ns)).step_s == Approx(base1 + launch_ns * 1e-9));
    CHECK(simulate_child(two, line_of_4(launch_ns)).step_s == Approx(base2 + 2 * launch_ns * 1e-9));
  }
}
