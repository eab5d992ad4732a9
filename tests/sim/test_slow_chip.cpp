// Per-chip differences are applied at execution time: one slow chip holds up every collective
// it takes part in, so a data-parallel step grows by the slow chip's extra compute.
#include <catch2/catch.hpp>

#include "sim/core/tensor_core_cost.hpp"
#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
Program compute_then_allreduce() {
  Program p;
  p.mesh = {{"data", 32}};  // 16 chips x 2 cores
  p.ops.push_back(matmul_op(MatmulShape{1, 4096, 1024, 1024}));
  Op ar = collective_op(CollectiveKind::AllReduce, 1 << 20, {"data"});
  ar.deps = {0};
  p.ops.push_back(ar);
  return p;
}
}  // namespace

TEST_CASE("a slow chip delays a data-parallel step by its extra compute") {
  const double factor = 3;
  auto base = config_with({{"topology", "4x4"}});
  auto slow = config_with(
      {{"topology", "4x4"}, {"hardware", {{"slow_chips", {5}}, {"slow_chip_factor", factor}}}});
  const Program p = compute_then_allreduce();
  const double op_s =
      compute_op_time(HardwareSpec::from_config(base), p.ops[0].compute).total.seconds();
  Run healthy = simulate_child(p, base);
  Run degraded = simulate_child(p, slow);
  CHECK(degraded.step_s - healthy.step_s == Approx((factor - 1) * op_s).epsilon(1e-3));
}

TEST_CASE("a slow chip outside the topology is a config error") {
  auto cfg = config_with({{"topology", "4x4"}, {"hardware", {{"slow_chips", {16}}}}});
  CHECK_THROWS_WITH(simulate_child(compute_then_allreduce(), cfg),
                    Catch::Contains("hardware.slow_chips"));
}

TEST_CASE("a healthy core's time in collectives splits into waiting, transfer and sync") {
  // Core 0 (healthy) reaches the all-reduce (factor - 1) x op time before the slow chip's cores:
  // that is its waiting; the steps' overheads are its synchronisation; the rest is transfer.
  const double factor = 3;
  auto slow = config_with(
      {{"topology", "4x4"}, {"hardware", {{"slow_chips", {5}}, {"slow_chip_factor", factor}}}});
  const Program p = compute_then_allreduce();
  const HardwareSpec hw = HardwareSpec::from_config(slow);
  const double op_s = compute_op_time(hw, p.ops[0].compute).total.seconds();
  auto v = in_child([&] {
    Topology topo(topology_from_json(slow.json()["topology"]));
    SimReport r = simulate(p, topo, hw, SimOptions::from_config(slow));
    const auto& st = r.collectives.begin()->second;
    return std::vector<double>{
        r.comm_split.waiting.seconds(),         r.comm_split.transfer.seconds(),
        r.comm_split.synchronisation.seconds(), r.communication.seconds(),
        static_cast<double>(st.steps),          st.longest.seconds()};
  });
  const double waiting = v[0], transfer = v[1], sync = v[2], comm = v[3], steps = v[4],
               longest = v[5];
  CHECK(waiting == Approx((factor - 1) * op_s).epsilon(1e-3));
  CHECK(sync == Approx(steps * hw.collective_step_overhead.seconds()).epsilon(1e-9));
  CHECK(transfer + sync == Approx(longest).epsilon(1e-9));
  // Synchronous collectives: the core is in the collective from arrival to the end.
  CHECK(waiting + transfer + sync == Approx(comm).epsilon(1e-9));
}
