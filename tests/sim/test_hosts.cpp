// The hosts (sim/machine/host.hpp) feeding a device loop, against closed forms: an input-bound
// loop's step period is a host's CPU time per batch (examples per host x ns per example / cores),
// doubling the cores halves it, free hosts leave the device-bound step, and the first batch
// arrives after its CPU time plus its PCIe copy; a loop iteration's fixed cost adds to every step.
#include <catch2/catch.hpp>

#include "models/device_loop.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
/// One step: a matmul on every core (4x4 chips x 2 cores: two hosts of 4x2 chips).
Program hosts_step() {
  Program p;
  p.mesh = {{"data", 32}};
  p.ops.push_back(matmul_op(MatmulShape{1, 1024, 1024, 1024}));
  return p;
}

constexpr int kHostsSteps = 6;
constexpr double kHostsBatch = 64;          // examples per step over all hosts
constexpr double kHostsExampleBytes = 1e4;  // infeed bytes per example

/// Starts of the simulated steps (s) and the hosts' count, for hosts at `ns_per_example`.
std::vector<double> hosts_starts(const Config& cfg, double ns_per_example,
                                 Duration iteration = {}) {
  return in_child([&] {
    const Program step = hosts_step();
    std::vector<const Program*> steps(kHostsSteps, &step);
    const DeviceLoop loop = make_device_loop(steps, iteration);
    InfeedPlan plan;
    plan.op_batch = loop.op_batch;
    plan.batch_examples.assign(kHostsSteps, kHostsBatch);
    plan.batch_example_bytes.assign(kHostsSteps, kHostsExampleBytes);
    plan.batch_cpu_ns_per_example.assign(kHostsSteps, ns_per_example);
    Topology topo(topology_from_json(cfg.json()["topology"]));
    SimOptions o = SimOptions::from_config(cfg);
    o.infeed = &plan;
    SimReport r = simulate(loop.program, topo, HardwareSpec::from_config(cfg), o);
    std::vector<double> v{static_cast<double>(r.hosts)};
    for (const InfeedBatchStats& b : r.infeed) v.push_back(b.started.seconds());
    return v;
  });
}

double hosts_device_step_s(const Config& cfg) {
  return compute_op_time(HardwareSpec::from_config(cfg), hosts_step().ops[0].compute)
      .total.seconds();
}
}  // namespace

TEST_CASE("hosts: an input-bound loop steps at a host's CPU time per batch - cores halve it") {
  const Config cfg =
      config_with({{"topology", "4x4"}, {"hardware", {{"host", {{"cpu_cores", 4}}}}}});
  const Config doubled =
      config_with({{"topology", "4x4"}, {"hardware", {{"host", {{"cpu_cores", 8}}}}}});
  const double device_s = hosts_device_step_s(cfg);
  // Examples per host: 64 over 2 hosts. A batch's CPU time is 10 device steps at 4 cores.
  const double per_host = kHostsBatch / 2;
  const double ns = 10 * device_s * 1e9 * 4 / per_host;
  auto batch_s = [&](int cores) { return per_host * ns * 1e-9 / cores; };
  const std::vector<double> v = hosts_starts(cfg, ns);
  REQUIRE(v.size() == kHostsSteps + 1u);
  CHECK(v[0] == 2);
  // The first batch: its CPU time, then its PCIe copy (4 examples per chip).
  const double copy_s =
      per_host / 8 * kHostsExampleBytes / (cfg.number("hardware.host.pcie_GBps") * 1e9);
  CHECK(v[1] == Approx(batch_s(4) + copy_s).epsilon(1e-6));
  for (int i = 2; i <= kHostsSteps; ++i) CHECK(v[i] - v[i - 1] == Approx(batch_s(4)).epsilon(1e-6));
  const std::vector<double> w = hosts_starts(doubled, ns);
  for (int i = 2; i <= kHostsSteps; ++i) {
    CHECK(w[i] - w[i - 1] == Approx(batch_s(8)).epsilon(1e-6));
    CHECK(w[i] - w[i - 1] == Approx((v[i] - v[i - 1]) / 2).epsilon(1e-6));
  }
}

TEST_CASE("hosts: free hosts leave the device-bound step") {
  const Config cfg = config_with({{"topology", "4x4"}});
  const std::vector<double> v = hosts_starts(cfg, 0);
  const double device_s = hosts_device_step_s(cfg);
  for (int i = 2; i <= kHostsSteps; ++i) CHECK(v[i] - v[i - 1] == Approx(device_s).epsilon(1e-6));
}

TEST_CASE("hosts: a device-loop iteration's fixed cost adds to every device-bound step") {
  const Config cfg = config_with(
      {{"topology", "4x4"}, {"hardware", {{"calibration", {{"loop_iteration_ns", 5000}}}}}});
  const HardwareSpec hw = HardwareSpec::from_config(cfg);
  REQUIRE(hw.loop_iteration.ns() == Approx(5000));
  const std::vector<double> v = hosts_starts(cfg, 0, hw.loop_iteration);
  const double step_s = hosts_device_step_s(cfg) + hw.loop_iteration.seconds();
  for (int i = 2; i <= kHostsSteps; ++i) CHECK(v[i] - v[i - 1] == Approx(step_s).epsilon(1e-6));
}

TEST_CASE("hosts: a copy holds an infeed thread - fewer threads than chips queue the copies") {
  // Free CPUs; each chip's copy (4 examples of 1e4 bytes) takes 5 device steps over its PCIe
  // link. With T threads for a host's 8 chips a batch's copies take 8 / T copies one after
  // another: the first batch arrives then, and the PCIe-bound loop steps at that period.
  const double device_s = hosts_device_step_s(config_with({{"topology", "4x4"}}));
  const double copy_s = 5 * device_s;
  const double per_chip_bytes = kHostsBatch / 16 * kHostsExampleBytes;
  const double gbps = per_chip_bytes / copy_s * 1e-9;
  for (int threads : {1, 2, 4, 8, 16}) {
    CAPTURE(threads);
    const Config cfg =
        config_with({{"topology", "4x4"},
                     {"hardware", {{"host", {{"pcie_GBps", gbps}, {"infeed_threads", threads}}}}}});
    const std::vector<double> v = hosts_starts(cfg, 0);
    const double batch_s = copy_s * std::max(1, 8 / threads);
    CHECK(v[1] == Approx(batch_s).epsilon(1e-6));
    for (int i = 2; i <= kHostsSteps; ++i) CHECK(v[i] - v[i - 1] == Approx(batch_s).epsilon(1e-6));
  }
}
