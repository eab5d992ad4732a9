// Collectives against their closed forms. B: link bandwidth, L: per-hop latency, O: the fixed
// cost of one collective step, all read from the config the test runs with.
#include <catch2/catch.hpp>

#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
const double S = 64.0 * 1024 * 1024;
}  // namespace

TEST_CASE("a transfer of S bytes over h hops takes S/B + (h-1) chunk/B + h L") {
  for (int h : {1, 3, 7}) {
    auto cfg = config_with({{"hardware", {{"cores_per_chip", 1}}}, {"topology", "16:wrap=0"}});
    auto p = params_of(cfg);
    Op op = collective_op(CollectiveKind::CollectivePermute, S);
    op.collective.shift = 1;
    // Two-member group {0, h}: member 0 sends to member 1, which sits h chips away.
    std::vector<std::vector<int>> groups{{0, h}};
    for (int c = 1; c < 16; ++c)
      if (c != h) groups.push_back({c});
    op.collective.replica_groups = groups;
    Run r = simulate_child(one_op(16, op), cfg);
    const double expect = S / p.B + (h - 1) * p.C / p.B + h * p.L + p.O;
    CHECK(r.step_s == Approx(expect).epsilon(1e-6));
  }
}

TEST_CASE("one-way ring all-reduce on a 1D ring matches 2(n-1)/n S/B + 2(n-1) L") {
  for (int n : {4, 8, 16}) {
    auto cfg = config_with(
        {{"hardware", {{"cores_per_chip", 1}}},
         {"topology", std::to_string(n)},
         {"collectives",
          {{"algorithm", "ring"}, {"reduction_compute", false}, {"dma_hbm_traffic", false}}}});
    auto p = params_of(cfg);
    Run r = simulate_child(one_op(n, collective_op(CollectiveKind::AllReduce, S)), cfg);
    const double steps = 2.0 * (n - 1);
    const double expect = steps / n * S / p.B + steps * (p.L + p.O);
    CHECK(r.step_s == Approx(expect).epsilon(0.02));
  }
}

TEST_CASE("a ring both ways halves the bandwidth term") {
  const int n = 8;
  auto cfg = config_with({{"hardware", {{"cores_per_chip", 1}}},
                          {"topology", "8"},
                          {"collectives",
                           {{"algorithm", "bidirectional_ring"},
                            {"reduction_compute", false},
                            {"dma_hbm_traffic", false}}}});
  auto p = params_of(cfg);
  Run r = simulate_child(one_op(n, collective_op(CollectiveKind::AllReduce, S)), cfg);
  const double steps = 2.0 * (n - 1);
  CHECK(r.step_s == Approx(steps / n * S / (2 * p.B) + steps * (p.L + p.O)).epsilon(0.02));
}

TEST_CASE("per-dimension all-reduce on a 2D torus composes the rings on shrinking data") {
  auto cfg = config_with({{"hardware", {{"cores_per_chip", 1}}},
                          {"topology", "8x4"},
                          {"collectives",
                           {{"algorithm", "per_dimension"},
                            {"reduction_compute", false},
                            {"dma_hbm_traffic", false}}}});
  auto p = params_of(cfg);
  Run r = simulate_child(one_op(32, collective_op(CollectiveKind::AllReduce, S)), cfg);
  // Both dimensions are torus rings (both ways); X (8) first on S, then Y (4) on S/8; the
  // all-gather mirrors the reduce-scatter.
  auto ring = [&](double n, double data) {
    return (n - 1) / n * data / (2 * p.B) + (n - 1) * (p.L + p.O);
  };
  const double expect = 2 * (ring(8, S) + ring(4, S / 8));
  CHECK(r.step_s == Approx(expect).epsilon(0.02));
}

TEST_CASE("per-dimension on the Multipod: on-chip step then the Y ring then the open X line") {
  // On-chip: one step of S/2 each way. Y: a 32-torus both ways on S/2 per core. X: a 128-line
  // walked as a snake (2 hops per step, one way) on S/64 per core. Along Y and X the chip's two
  // cores run separate rings over the same links.
  for (bool coalesce : {false, true}) {
    auto cfg =
        config_with({{"topology", "tpu_v3_multipod"},
                     {"network", {{"coalesce_ring_steps", coalesce}}},
                     {"collectives", {{"reduction_compute", false}, {"dma_hbm_traffic", false}}}});
    auto p = params_of(cfg);
    const double Bon = cfg.number("hardware.onchip.bandwidth_GBps") * 1e9;
    const double Lon = cfg.number("hardware.onchip.latency_ns") * 1e-9;
    Run r = simulate_child(one_op(8192, collective_op(CollectiveKind::AllReduce, S)), cfg);
    const double onchip = S / 2 / Bon + Lon + p.O;
    const double y_piece = S / 2 / 32 / 2;  // per core per step, each way
    const double x_piece = S / 64 / 128;    // per core per step
    double y = 0, x = 0;
    if (!coalesce) {
      // Step by step, a link alternates between the two rings: a step costs the larger of the
      // link time for both rings' data and one ring's own latency path.
      y = 31 * std::max(2 * y_piece / p.B, y_piece / p.B + p.L + p.O);
      x = 127 *
          std::max(2 * x_piece / p.B, x_piece / p.B + std::min(x_piece, p.C) / p.B + 2 * p.L + p.O);
    } else {
      // Coalesced, each ring's phase is one message per pair; the second ring's message queues
      // behind the first, and every step still pays its latency path and synchronisation.
      y = 2 * 31 * y_piece / p.B + 31 * (p.L + p.O);
      const double xb = 127 * x_piece;
      x = 2 * xb / p.B + std::min(xb, p.C) / p.B + 127 * (2 * p.L + p.O);
    }
    INFO("coalesce_ring_steps " << coalesce);
    CHECK(r.step_s == Approx(2 * (onchip + y + x)).epsilon(0.02));
  }
}

TEST_CASE("two all-reduces sharing the same links take twice as long as one") {
  // Cores keep issuing while collectives are in flight, so both run at once.
  auto cfg = config_with(
      {{"hardware", {{"cores_per_chip", 1}, {"async_collectives", true}}},
       {"topology", "8"},
       {"collectives",
        {{"algorithm", "ring"}, {"reduction_compute", false}, {"dma_hbm_traffic", false}}}});
  Run one = simulate_child(one_op(8, collective_op(CollectiveKind::AllReduce, S)), cfg);
  Program two = one_op(8, collective_op(CollectiveKind::AllReduce, S));
  two.ops.push_back(collective_op(CollectiveKind::AllReduce, S));
  Run both = simulate_child(two, cfg);
  CHECK(both.step_s == Approx(2 * one.step_s).epsilon(0.03));
  // Without contention they would overlap completely.
  auto free_cfg = config_with(
      {{"hardware", {{"cores_per_chip", 1}, {"async_collectives", true}}},
       {"topology", "8"},
       {"network", {{"contention", false}}},
       {"collectives",
        {{"algorithm", "ring"}, {"reduction_compute", false}, {"dma_hbm_traffic", false}}}});
  Run free = simulate_child(two, free_cfg);
  CHECK(free.step_s == Approx(one.step_s).epsilon(0.01));
}

TEST_CASE("a collective that needs another collective's result does not hold the core") {
  // A gradient bucket's all-reduce after its reduce-scatter: with async collectives the core
  // passes it (it starts when the reduce-scatter is done) and runs the independent matmul at
  // once, so the step is the longer of the chain and the matmul, not their sum.
  auto cfg = config_with(
      {{"hardware", {{"cores_per_chip", 1}, {"async_collectives", true}}},
       {"topology", "8"},
       {"collectives",
        {{"algorithm", "ring"}, {"reduction_compute", false}, {"dma_hbm_traffic", false}}}});
  Program chain = one_op(8, collective_op(CollectiveKind::ReduceScatter, S));
  chain.ops.push_back(collective_op(CollectiveKind::AllReduce, S / 8));
  chain.ops.back().deps = {0};
  const Run rs = simulate_child(one_op(8, collective_op(CollectiveKind::ReduceScatter, S)), cfg);
  const Run both = simulate_child(chain, cfg);
  REQUIRE(both.step_s > rs.step_s);
  // A matmul longer than the chain: double it until it is.
  MatmulShape shape{1, 1024, 1024, 1024};
  Run mm;
  do {
    shape.m *= 2;
    mm = simulate_child(one_op(8, matmul_op(shape)), cfg);
  } while (mm.step_s < 1.5 * both.step_s);
  Program p = chain;
  p.ops.push_back(matmul_op(shape));  // independent of both collectives
  const Run r = simulate_child(p, cfg);
  CHECK(r.step_s == Approx(mm.step_s).epsilon(0.01));
  CHECK(r.op_end_s[1] == Approx(both.op_end_s[1]).epsilon(0.01));
  // Held at the all-reduce until the reduce-scatter is done, the matmul would end at rs + mm.
  CHECK(r.step_s < rs.step_s + mm.step_s - 0.5 * rs.step_s);
  // Without async collectives the core drives each collective itself: the sum.
  auto sync = cfg.json();
  sync["hardware"]["async_collectives"] = false;
  const Run s = simulate_child(p, load_config(sync));
  CHECK(s.step_s == Approx(both.step_s + mm.step_s).epsilon(0.01));
}

TEST_CASE("summing received data costs vector-unit and HBM time") {
  auto base = nlohmann::json{{"hardware", {{"cores_per_chip", 1}}},
                             {"topology", "8"},
                             {"collectives", {{"algorithm", "ring"}}}};
  auto off = base;
  off["collectives"]["reduction_compute"] = false;
  Program ar = one_op(8, collective_op(CollectiveKind::AllReduce, S));
  Run with = simulate_child(ar, config_with(base));
  Run without = simulate_child(ar, config_with(off));
  // A reduce-scatter step sums what arrives as it streams in: it reads the local operand and
  // writes the sum (2 x S/n bytes of HBM), and the DMA engines read what a member sends (S/n);
  // with collectives.reduce_on_arrival=false what arrives is written first and read back
  // (3 + 2 passes). An all-gather step's DMA reads what it sends and writes what it receives
  // (2 x S/n). At the default rates (450 GB/s x 0.85 vs 100 GB/s links) a one-way ring hides
  // all of it behind the transfer; slow the HBM to a link's rate and it sets every step.
  CHECK(with.step_s >= without.step_s);
  auto slow = base;
  slow["hardware"]["hbm"] = {{"bandwidth_GBps_per_core", 100.0}};
  auto cfg = config_with(slow);
  const double hbm = 100e9 * cfg.number("hardware.calibration.hbm_efficiency");
  const double n = 8, chunk = S / n;
  const double ag_step =
      std::max(chunk / 100e9 + 1e-9 * cfg.number("hardware.ici.latency_ns"), 2 * chunk / hbm);
  const double O = 1e-9 * cfg.number("hardware.calibration.collective_step_overhead_ns");
  for (bool on_arrival : {true, false}) {
    auto doc = slow;
    doc["collectives"]["reduce_on_arrival"] = on_arrival;
    Run slow_run = simulate_child(ar, config_with(doc));
    const double passes = on_arrival ? 2 + 1 : 3 + 2;
    const double rs_step = cfg.number("hardware.hbm.latency_ns") * 1e-9 + passes * chunk / hbm;
    CHECK(slow_run.step_s ==
          Approx((n - 1) * (rs_step + O) + (n - 1) * (ag_step + O)).epsilon(0.02));
  }
}

TEST_CASE("packet level matches message level without contention") {
  auto make = uncontended_8x8;
  Program ar = one_op(64, collective_op(CollectiveKind::AllReduce, 4.0 * 1024 * 1024));
  Run msg = simulate_child(ar, make("message"));
  Run pkt = simulate_child(ar, make("packet"));
  CHECK(pkt.step_s == Approx(msg.step_s).epsilon(0.01));
}

TEST_CASE(
    "under contention packets interleave so the first flow finishes later than whole messages") {
  auto make = [](const char* fidelity) {
    return config_with({{"hardware", {{"cores_per_chip", 1}}},
                        {"topology", "4:wrap=0"},
                        {"network", {{"fidelity", fidelity}}}});
  };
  // Chip 0 sends to chip 2 and chip 1 sends to chip 3 at once: both cross link 1->2.
  Program p;
  p.mesh = {{"all", 4}};
  Op a = collective_op(CollectiveKind::CollectivePermute, S / 16);
  a.collective.shift = 1;
  a.collective.replica_groups = {{0, 2}, {1}, {3}};
  Op b = a;
  b.collective.replica_groups = {{1, 3}, {0}, {2}};
  p.ops = {a, b};
  Run msg = simulate_child(p, make("message"));
  Run pkt = simulate_child(p, make("packet"));
  const double first_msg = std::min(msg.op_end_s[0], msg.op_end_s[1]);
  const double first_pkt = std::min(pkt.op_end_s[0], pkt.op_end_s[1]);
  CHECK(first_pkt > 1.5 * first_msg);                     // message level lets one flow go first
  CHECK(pkt.step_s == Approx(msg.step_s).epsilon(0.05));  // the link carries the same bytes
}
