// The flow level against closed forms and against the other levels. Flows share each link
// max-min fairly and rates change only when a flow starts or ends. B, L, O as in sim_fixture;
// P: network.packet_bytes.
#include <catch2/catch.hpp>

#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

TEST_CASE("flow level: one flow over h hops takes S/B + (h-1) P/B + h L") {
  const double S = 4.0 * 1024 * 1024;
  for (int h : {1, 3, 7}) {
    auto cfg = line_cfg("flow", 16);
    auto p = params_of(cfg);
    const double P = static_cast<double>(cfg.integer("network.packet_bytes"));
    Run r = simulate_child(one_op(16, send(0, h, 16, S)), cfg);
    CHECK(r.step_s == Approx(S / p.B + (h - 1) * P / p.B + h * p.L + p.O).epsilon(1e-6));
  }
}

TEST_CASE("flow level: max-min sharing, rates recomputed when a flow ends") {
  // On a line of 4, flow A (0 -> 3, S bytes) and flow B (1 -> 2, S/2 bytes) share link 1->2 at
  // B/2 each. B ends at S/B; A has S/2 left and then runs alone at B, ending at 1.5 S/B.
  const double S = 4.0 * 1024 * 1024;
  auto cfg = line_cfg("flow", 4);
  auto p = params_of(cfg);
  const double P = static_cast<double>(cfg.integer("network.packet_bytes"));
  Program prog;
  prog.mesh = {{"all", 4}};
  prog.ops = {send(0, 3, 4, S), send(1, 2, 4, S / 2)};
  Run r = simulate_child(prog, cfg);
  CHECK(r.op_end_s[1] == Approx(S / p.B + p.L + p.O).epsilon(1e-6));
  CHECK(r.op_end_s[0] == Approx(1.5 * S / p.B + 2 * P / p.B + 3 * p.L + p.O).epsilon(1e-6));
}

TEST_CASE("flow and message levels agree without contention") {
  auto make = uncontended_8x8;
  Program ar = one_op(64, collective_op(CollectiveKind::AllReduce, 4.0 * 1024 * 1024));
  Run msg = simulate_child(ar, make("message"));
  Run flow = simulate_child(ar, make("flow"));
  CHECK(flow.step_s == Approx(msg.step_s).epsilon(1e-6));
}

TEST_CASE("flow level is within a few percent of the packet level under contention") {
  // A direct all-to-all on an 8x8 torus loads every link with many interleaved flows.
  auto make = [](const char* fidelity) {
    return config_with({{"hardware", {{"cores_per_chip", 1}}},
                        {"topology", "8x8"},
                        {"network", {{"fidelity", fidelity}}},
                        {"collectives", {{"all_to_all_algorithm", "direct"}}}});
  };
  const double S = 4.0 * 1024 * 1024;
  Program a2a = one_op(64, collective_op(CollectiveKind::AllToAll, S));
  Run flow = simulate_child(a2a, make("flow"));
  Run pkt = simulate_child(a2a, make("packet"));
  CHECK(flow.step_s == Approx(pkt.step_s).epsilon(0.03));
  // Above the bisection bound X S / (8 B).
  CHECK(flow.step_s >= 8 * S / 8 / params_of(make("flow")).B);
  // The two-flow case of the packet test: both levels finish the pair together.
  Program two;
  two.mesh = {{"all", 4}};
  two.ops = {send(0, 2, 4, S / 4), send(1, 3, 4, S / 4)};
  Run f2 = simulate_child(two, line_cfg("flow", 4));
  Run p2 = simulate_child(two, line_cfg("packet", 4));
  CHECK(f2.op_end_s[0] == Approx(p2.op_end_s[0]).epsilon(0.03));
  CHECK(f2.op_end_s[1] == Approx(p2.op_end_s[1]).epsilon(0.03));
}
