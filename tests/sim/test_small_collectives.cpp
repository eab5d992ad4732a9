// Latency-bound collective algorithms and `auto` against closed forms. B: link bandwidth, L:
// per-hop latency, O: the fixed cost of one collective step, C: the message level's chunk, all
// read from the config the test runs with. Reductions are off unless a test says otherwise.
#include <catch2/catch.hpp>

#include "sim/collectives/collective_algorithm.hpp"
#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
Config cfg_for(const std::string& topology, const std::string& algorithm,
               nlohmann::json network = nlohmann::json::object()) {
  return config_with(
      {{"hardware", {{"cores_per_chip", 1}}},
       {"topology", topology},
       {"network", network},
       {"collectives",
        {{"algorithm", algorithm}, {"reduction_compute", false}, {"dma_hbm_traffic", false}}}});
}
/// Step time and the algorithm the run used (its index in algorithm_names()).
std::pair<double, std::string> run_with_algorithm(const Program& p, const Config& cfg) {
  auto v = in_child([&] {
    HardwareSpec hw = HardwareSpec::from_config(cfg);
    Topology topo(topology_from_json(cfg.json()["topology"]));
    SimReport r = simulate(p, topo, hw, SimOptions::from_config(cfg));
    const auto names = algorithm_names();
    const auto& used = r.collectives.begin()->second.algorithm;
    const double index =
        static_cast<double>(std::find(names.begin(), names.end(), used) - names.begin());
    return std::vector<double>{r.step_time.seconds(), index};
  });
  return {v.at(0), algorithm_names().at(static_cast<std::size_t>(v.at(1)))};
}
}  // namespace

TEST_CASE("recursive doubling all-reduce on a 2x2x2 grid: log2(n) (S/B + L + O)") {
  // In grid order every partner is one hop away along one dimension: no link is shared.
  for (double S : {1024.0, 4.0 * 1024 * 1024}) {
    auto cfg = cfg_for("2x2x2:wrap=0,0,0", "recursive_doubling");
    auto p = params_of(cfg);
    Run r = simulate_child(one_op(8, collective_op(CollectiveKind::AllReduce, S)), cfg);
    CHECK(r.step_s == Approx(3 * (S / p.B + p.L + p.O)).epsilon(1e-6));
  }
}

TEST_CASE("halving-doubling all-reduce: 2 log2(n) (L + O) + 2 (n-1)/n S/B") {
  const double S = 4.0 * 1024 * 1024;
  auto cfg = cfg_for("2x2x2:wrap=0,0,0", "halving_doubling");
  auto p = params_of(cfg);
  Run ar = simulate_child(one_op(8, collective_op(CollectiveKind::AllReduce, S)), cfg);
  CHECK(ar.step_s == Approx(2 * (7.0 / 8 * S / p.B + 3 * (p.L + p.O))).epsilon(1e-6));
  // Reduce-scatter alone is the halving half: S/2 + S/4 + S/8.
  Run rs = simulate_child(one_op(8, collective_op(CollectiveKind::ReduceScatter, S)), cfg);
  CHECK(rs.step_s == Approx(7.0 / 8 * S / p.B + 3 * (p.L + p.O)).epsilon(1e-6));
}

TEST_CASE("shift doubling on a ring: recursive doubling's steps, half its busiest link's bytes") {
  // A 16-chip ring, S large enough that a link serialises the messages crossing it (S/2B > L +
  // C/B). Recursive doubling's step k swaps S with i xor 2^k: the 2^k members of a block's lower
  // half cross the link into its upper half at hops 0 .. 2^k - 1, one after another, so the step
  // takes 2^k S/B + L + O. Shift doubling sends S/2 each way to i +- 2^k: the 2^k members behind
  // a link cross it, 2^k S/(2B) + L + O, but for the step that halves the ring (+8 = -8), which
  // swaps S with every route going the + way round: 8 S/B + L + O.
  const double S = 4.0 * 1024 * 1024;
  auto rd = cfg_for("16", "recursive_doubling");
  auto sd = cfg_for("16", "shift_doubling");
  auto p = params_of(sd);
  const Program ar = one_op(16, collective_op(CollectiveKind::AllReduce, S));
  const double rd_s = simulate_child(ar, rd).step_s;
  const double sd_s = simulate_child(ar, sd).step_s;
  CHECK(rd_s == Approx(15 * S / p.B + 4 * (p.L + p.O)).epsilon(1e-6));
  CHECK(sd_s == Approx((1 + 2 + 4) * S / (2 * p.B) + 8 * S / p.B + 4 * (p.L + p.O)).epsilon(1e-6));
  // Along an open line (no ring to shift round) it is recursive doubling, step for step.
  const Program line = one_op(8, collective_op(CollectiveKind::AllReduce, S));
  CHECK(simulate_child(line, cfg_for("8:wrap=0", "shift_doubling")).step_s ==
        simulate_child(line, cfg_for("8:wrap=0", "recursive_doubling")).step_s);
}

TEST_CASE("one-shot all-reduce without contention costs one step over the longest route") {
  // A line of 4: the farthest member is 3 hops away; a message pipelines in chunks.
  const double S = 256.0 * 1024;
  auto cfg = cfg_for("4:wrap=0", "one_shot", {{"contention", false}});
  auto p = params_of(cfg);
  Run r = simulate_child(one_op(4, collective_op(CollectiveKind::AllReduce, S)), cfg);
  CHECK(r.step_s == Approx(S / p.B + 2 * std::min(S, p.C) / p.B + 3 * p.L + p.O).epsilon(1e-6));
}

TEST_CASE("one-shot sums the n - 1 buffers it receives") {
  // With HBM slower than the links the reduction of the (n-1) S bytes it receives and the DMA
  // traffic set the step. Summed as they stream in (collectives.reduce_on_arrival), each piece
  // costs a read of the local sum and a write of the new one (2 passes) and the DMA reads the S
  // it sends to each of the n-1 others; written first (false), the DMA also writes the (n-1) S
  // that arrive and the reduction reads them back (3 passes).
  const double S = 256.0 * 1024;
  const double n = 4;
  for (bool on_arrival : {true, false}) {
    auto doc = nlohmann::json{
        {"hardware", {{"cores_per_chip", 1}, {"hbm", {{"bandwidth_GBps_per_core", 10.0}}}}},
        {"topology", "4:wrap=0"},
        {"network", {{"contention", false}}},
        {"collectives", {{"algorithm", "one_shot"}, {"reduce_on_arrival", on_arrival}}}};
    auto cfg = config_with(doc);
    const double hbm = 10e9 * cfg.number("hardware.calibration.hbm_efficiency");
    const double hbm_latency = cfg.number("hardware.hbm.latency_ns") * 1e-9;
    const double reduction = (on_arrival ? 2 : 3) * (n - 1) * S;
    const double dma = (n - 1) * S + (on_arrival ? 0 : (n - 1) * S);
    Run r = simulate_child(one_op(4, collective_op(CollectiveKind::AllReduce, S)), cfg);
    CHECK(r.step_s ==
          Approx(hbm_latency + (reduction + dma) / hbm + params_of(cfg).O).epsilon(1e-3));
  }
}

TEST_CASE("algorithms that cannot serve a group say why") {
  auto cfg = cfg_for("6", "recursive_doubling");
  CHECK_THROWS_WITH(simulate_child(one_op(6, collective_op(CollectiveKind::AllReduce, 1024)), cfg),
                    Catch::Contains("2^k members; this one has 6"));
  CHECK_THROWS_WITH(simulate_child(one_op(6, collective_op(CollectiveKind::AllReduce, 1024)),
                                   cfg_for("6", "shift_doubling")),
                    Catch::Contains("2^k members; this one has 6"));
  CHECK_THROWS_WITH(simulate_child(one_op(8, collective_op(CollectiveKind::ReduceScatter, 1024)),
                                   cfg_for("8", "shift_doubling")),
                    Catch::Contains("shift_doubling is an all-reduce algorithm"));
  auto big = cfg_for("128", "one_shot");
  CHECK_THROWS_WITH(
      simulate_child(one_op(128, collective_op(CollectiveKind::AllReduce, 1024)), big),
      Catch::Contains("at most 64"));
}

TEST_CASE("auto picks a latency-bound algorithm for small messages and a ring for large ones") {
  // On a 16-chip ring: the fixed algorithms' times bound what auto may take.
  const std::vector<std::string> fixed = {
      "ring",           "bidirectional_ring", "per_dimension", "recursive_doubling",
      "shift_doubling", "halving_doubling",   "one_shot"};
  for (double S : {2048.0, 64.0 * 1024 * 1024}) {
    Program p = one_op(16, collective_op(CollectiveKind::AllReduce, S));
    double best = 1e9;
    std::string best_name;
    for (const auto& name : fixed) {
      const double t = run_with_algorithm(p, cfg_for("16", name)).first;
      if (t < best) best = t, best_name = name;
    }
    auto [t, used] = run_with_algorithm(p, cfg_for("16", "auto"));
    INFO("S = " << S << ", auto used " << used << ", the best fixed one is " << best_name);
    CHECK(t <= best * 1.05);
    if (S < 4096)
      CHECK((used == "recursive_doubling" || used == "shift_doubling" ||
             used == "halving_doubling" || used == "one_shot"));
    else
      CHECK((used == "bidirectional_ring" || used == "per_dimension"));
  }
}
