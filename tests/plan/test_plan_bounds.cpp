// Lower bounds of `tpusim plan` (tools/plan/bounds.hpp), against closed forms.
#include <catch2/catch.hpp>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "tests/sim/sim_fixture.hpp"
#include "tools/plan/bounds.hpp"

using namespace tpusim;

namespace {
HardwareSpec tpu_v3() {
  return HardwareSpec::from_config(load_config({{"preset", "tpu_v3"}, {"topology", "4x4"}}));
}

Op collective(CollectiveKind kind, double bytes, std::vector<std::string> axes) {
  Op op;
  op.name = "c";
  op.kind = to_string(kind);
  op.is_collective = true;
  op.collective.kind = kind;
  op.collective.bytes = bytes;
  op.collective.axes = std::move(axes);
  return op;
}

Program program(std::vector<MeshAxis> mesh, std::vector<Op> ops) {
  Program p;
  p.model = "test";
  p.mesh = std::move(mesh);
  p.examples_per_step = 1;
  p.ops = std::move(ops);
  return p;
}

/// `p` simulated on TPU v3 chips of `topo` ("4x4") with each of `algorithms`: no step below
/// `bound_ms`.
void check_steps_above(const Program& p, const Topology& topo, double bound_ms,
                       std::initializer_list<const char*> algorithms) {
  for (const char* algorithm : algorithms) {
    INFO(algorithm);
    const Config cfg = load_config(
        {{"preset", "tpu_v3"}, {"topology", "4x4"}, {"collectives", {{"algorithm", algorithm}}}});
    const std::vector<double> step = test::in_child([&] {
      const SimReport r =
          simulate(p, topo, HardwareSpec::from_config(cfg), SimOptions::from_config(cfg));
      return std::vector<double>{r.step_time.seconds() * 1e3};
    });
    REQUIRE(step.size() == 1);
    CHECK(step[0] >= bound_ms * (1 - 1e-9));
  }
}
}  // namespace

TEST_CASE("plan bounds: compute is the sum of the ops' cost formula times") {
  const HardwareSpec hw = tpu_v3();
  const Topology topo(parse_topology("4x4"));
  Op a, b;
  a.name = "a";
  a.compute.matmul = MatmulShape{1, 1024, 1024, 1024};
  a.compute.flops = a.compute.matmul->flops();
  b.name = "b";
  b.compute.vpu_elements = 1e6;
  b.compute.bytes_read = 4e6;
  const auto bound = plan::step_lower_bound(program({{"data", 32}}, {a, b}), topo, hw);
  const double expect_ms =
      (compute_op_time(hw, a.compute).total.ns() + compute_op_time(hw, b.compute).total.ns()) *
      1e-6;
  CHECK(bound.compute_ms == Approx(expect_ms));
  CHECK(bound.bisection_ms == 0);
  // At least the MXU's peak rate.
  CHECK(bound.compute_ms >= a.compute.flops / hw.peak_flops_per_core() * 1e3);
}

TEST_CASE("plan bounds: collectives across the bisection, per direction") {
  const HardwareSpec hw = tpu_v3();
  const Topology topo(parse_topology("4x4"));  // wraps: 4 rows x 2 links cut
  const double cut_Bps = 8 * hw.ici_bandwidth.bytes_per_s();
  REQUIRE(topo.bisection_links() == 8);
  const double S = 64e6;
  auto bisection = [&](std::vector<MeshAxis> mesh, Op op) {
    return plan::step_lower_bound(program(std::move(mesh), {op}), topo, hw).bisection_ms;
  };
  // One group of all 32 cores, 16 on each side: an all-reduce moves S each way.
  CHECK(bisection({{"data", 32}}, collective(CollectiveKind::AllReduce, S, {"data"})) ==
        Approx(S / cut_Bps * 1e3));
  // Reduce-scatter and all-gather: the other side's half of the shards, S / 2 each way.
  CHECK(bisection({{"data", 32}}, collective(CollectiveKind::ReduceScatter, S, {"data"})) ==
        Approx(S / 2 / cut_Bps * 1e3));
  CHECK(bisection({{"data", 32}}, collective(CollectiveKind::AllGather, S, {"data"})) ==
        Approx(S / 2 / cut_Bps * 1e3));
  // All-to-all: n_A n_B S / N = 16 x 16 x S / 32 each way.
  CHECK(bisection({{"data", 32}}, collective(CollectiveKind::AllToAll, S, {"data"})) ==
        Approx(8 * S / cut_Bps * 1e3));
  // Groups of the two cores of a chip never cross the cut.
  CHECK(bisection({{"data", 16}, {"model", 2}},
                  collective(CollectiveKind::AllReduce, S, {"model"})) == 0);
  // Two groups along "data" (one per model slot), both straddling: 2 S each way.
  CHECK(
      bisection({{"data", 16}, {"model", 2}}, collective(CollectiveKind::AllReduce, S, {"data"})) ==
      Approx(2 * S / cut_Bps * 1e3));
}

TEST_CASE("plan bounds: the critical path waits for an all-reduce between two ops") {
  HardwareSpec hw = tpu_v3();
  const Topology topo(parse_topology("4x4"));
  REQUIRE(hw.devices_per_chip == 2);
  Op a, b;
  a.name = "a";
  a.compute.matmul = MatmulShape{1, 1024, 1024, 1024};
  a.compute.flops = a.compute.matmul->flops();
  b = a;
  b.name = "b";
  const double S = 64e6;
  Op c = collective(CollectiveKind::AllReduce, S, {"model"});
  c.deps = {0};
  b.deps = {1};
  // "model" is the innermost axis: its groups are the two cores of a chip, joined by the on-chip
  // path alone. Each core must receive 2 (p-1)/p S = S of it over that path.
  const auto bound =
      plan::step_lower_bound(program({{"data", 16}, {"model", 2}}, {a, c, b}), topo, hw);
  const double ta = compute_op_time(hw, a.compute).total.ns() * 1e-6;
  const double comm = S / hw.onchip_bandwidth.bytes_per_s() * 1e3;
  CHECK(bound.compute_ms == Approx(2 * ta));
  CHECK(bound.critical_ms == Approx(2 * ta + comm));
  // Ingress: the chip's two cores receive 2 S over the two on-chip links into them.
  CHECK(bound.ingress_ms == Approx(comm));
  CHECK(bound.step_ms() == Approx(2 * ta + comm));
  // Without the dependency and with async collectives, the all-reduce overlaps the second op;
  // without async collectives the core waits for it.
  b.deps = {};
  REQUIRE_FALSE(hw.async_collectives);
  CHECK(plan::step_lower_bound(program({{"data", 16}, {"model", 2}}, {a, c, b}), topo, hw)
            .critical_ms == Approx(2 * ta + comm));
  hw.async_collectives = true;
  const auto overlapped =
      plan::step_lower_bound(program({{"data", 16}, {"model", 2}}, {a, c, b}), topo, hw);
  CHECK(overlapped.critical_ms == Approx(ta + std::max(ta, comm)));
}

TEST_CASE("plan bounds: ingress counts what a chip receives over the links along the group") {
  HardwareSpec hw = tpu_v3();
  hw.async_collectives = true;
  const Topology topo(parse_topology("4x4"));
  const double S = 64e6;
  // All-gathers over all 32 cores: each receives 31/32 S over the 4 ICI links into its chip
  // and the on-chip link from its neighbour; the chip's two cores share them.
  Op g = collective(CollectiveKind::AllGather, S, {"data"});
  const auto bound = plan::step_lower_bound(program({{"data", 32}}, {g, g}), topo, hw);
  const double chip_in = 4 * hw.ici_bandwidth.bytes_per_s() + 2 * hw.onchip_bandwidth.bytes_per_s();
  CHECK(bound.ingress_ms == Approx(2 * 2 * (31.0 / 32) * S / chip_in * 1e3));
  // The critical path: the two gathers at once, each at its least time: the larger of a core's
  // 31/32 S over the 4 ICI links and the on-chip link, and its chip's 15/16 S (the other 15
  // chips' shards) over the 4 ICI links alone.
  const double core_in = 4 * hw.ici_bandwidth.bytes_per_s() + hw.onchip_bandwidth.bytes_per_s();
  const double chip_ici = 4 * hw.ici_bandwidth.bytes_per_s();
  CHECK(bound.critical_ms ==
        Approx(std::max((31.0 / 32) * S / core_in, (15.0 / 16) * S / chip_ici) * 1e3));
}

TEST_CASE("plan bounds: a group of cores on several chips takes what its chips must take in") {
  // data 4 x model 8 on a 4x4 TPU v3 torus: each model group is 8 cores, 2 on each of 4 chips
  // along X. A core alone would need 2 x 7/8 S of an all-reduce over 2 ICI links and the on-chip
  // path; the chip's two cores share the 2 ICI links and must take in 2 x 3/4 S over them
  // (bounds.hpp). The larger is the least time, and no algorithm simulated beats it.
  const double S = 16e6;
  const Config cfg0 = load_config({{"preset", "tpu_v3"}, {"topology", "4x4"}});
  const HardwareSpec hw = HardwareSpec::from_config(cfg0);
  const Topology topo(parse_topology("4x4"));
  REQUIRE(hw.devices_per_chip == 2);
  const Program p =
      program({{"data", 4}, {"model", 8}}, {collective(CollectiveKind::AllReduce, S, {"model"})});
  const double ici = hw.ici_bandwidth.bytes_per_s(), onchip = hw.onchip_bandwidth.bytes_per_s();
  const double core_ms = 2 * (7.0 / 8) * S / (2 * ici + onchip) * 1e3;
  const double chip_ms = 2 * (3.0 / 4) * S / (2 * ici) * 1e3;
  REQUIRE(chip_ms > core_ms);
  const double bound = plan::step_lower_bound(p, topo, hw).critical_ms;
  CHECK(bound == Approx(chip_ms));
  check_steps_above(p, topo, bound,
                    {"ring", "bidirectional_ring", "per_dimension", "halving_doubling",
                     "recursive_doubling", "one_shot"});
}

TEST_CASE("plan bounds: an all-reduce on the critical path takes what every algorithm delivers") {
  HardwareSpec hw = tpu_v3();
  const Topology topo(parse_topology("4x4"));
  const double S = 64e6;
  // Groups of 4 along "model". Each member of an all-gather receives 3/4 S; every all-reduce
  // tpusim simulates gives each member 2 x 3/4 S (rings, per-dimension rings, halving-doubling;
  // one-shot and recursive doubling more), every reduce-scatter 3/4 S: over the same links, the
  // all-reduce's least time is twice the gather's and the reduce-scatter's equals it.
  const std::vector<MeshAxis> mesh{{"data", 8}, {"model", 4}};
  auto critical = [&](CollectiveKind kind) {
    return plan::step_lower_bound(program(mesh, {collective(kind, S, {"model"})}), topo, hw)
        .critical_ms;
  };
  const double gather = critical(CollectiveKind::AllGather);
  REQUIRE(gather > 0);
  CHECK(critical(CollectiveKind::AllReduce) == Approx(2 * gather));
  CHECK(critical(CollectiveKind::ReduceScatter) == Approx(gather));
}

TEST_CASE("plan bounds: a group on a run of chips that does not close a ring uses its links in") {
  // data 8 x model 4 on a 4x4 TPU v3 torus: each model group is 4 cores, 2 on each of 2
  // neighbouring chips along X. A route from the other chip arrives along X from one side only
  // (the shorter way round the 4-chip ring), so the chip takes in the other chip's half of an
  // all-gather, S / 2, over 1 link, not 2; a core its 3/4 S over that link and the on-chip path.
  const HardwareSpec hw = tpu_v3();
  const double S = 16e6, ici = hw.ici_bandwidth.bytes_per_s();
  const double onchip = hw.onchip_bandwidth.bytes_per_s();
  const Topology topo(parse_topology("4x4"));
  const Op gather = collective(CollectiveKind::AllGather, S, {"model"});
  const Program p = program({{"data", 8}, {"model", 4}}, {gather});
  const double core_ms = (3.0 / 4) * S / (ici + onchip) * 1e3;
  const double chip_ms = (1.0 / 2) * S / ici * 1e3;
  const double bound = plan::step_lower_bound(p, topo, hw).critical_ms;
  CHECK(bound == Approx(std::max(core_ms, chip_ms)));
  // Where routes need not be shortest (failed links), both of the chip's X links count.
  const double any_route = plan::step_lower_bound(p, topo, hw, nullptr, false).critical_ms;
  CHECK(any_route ==
        Approx(std::max((3.0 / 4) * S / (2 * ici + onchip), (1.0 / 2) * S / (2 * ici)) * 1e3));
  CHECK(any_route < bound);
  // No all-gather algorithm tpusim simulates beats it.
  check_steps_above(
      p, topo, bound,
      {"ring", "bidirectional_ring", "per_dimension", "halving_doubling", "one_shot"});
}

TEST_CASE("plan bounds: a grid without wrap links gives its end chips one link in") {
  // A 4x1 grid without wrap: a group of all 4 chips' cores along X; the end chips receive
  // over one X link. An all-reduce's 2 x 3/4 S into a chip then takes 1.5 S / ici.
  HardwareSpec hw = tpu_v3();
  const Topology topo(parse_topology("4x1:wrap=0,0"));
  const double S = 8e6;
  const Program p = program({{"data", 8}}, {collective(CollectiveKind::AllReduce, S, {"data"})});
  const double ici = hw.ici_bandwidth.bytes_per_s(), onchip = hw.onchip_bandwidth.bytes_per_s();
  const double chip_ms = 2 * (3.0 / 4) * S / ici * 1e3;
  const double core_ms = 2 * (7.0 / 8) * S / (ici + onchip) * 1e3;
  CHECK(plan::step_lower_bound(p, topo, hw).critical_ms == Approx(std::max(chip_ms, core_ms)));
}
