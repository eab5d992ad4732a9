// Direction checks of a whole training step: more link bandwidth or more FLOP/s never slows a
// step; at a fixed per-core batch, more chips never shorten the gradient all-reduce.
#include <catch2/catch.hpp>

#include "models/workload.hpp"
#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
// A small BERT (2 layers) so each simulation takes milliseconds.
nlohmann::json small_bert(const std::string& topology, int batch) {
  return {{"topology", topology},
          {"workload", {{"model", "bert_large"}, {"global_batch", batch}, {"layers", 2}}},
          {"parallelism", {{"weight_update_sharding", false}}}};
}

struct StepNumbers {
  double step_s, allreduce_s;
};

StepNumbers step_of(const nlohmann::json& study) {
  auto v = in_child([&] {
    Config cfg = config_with(study);
    Topology topo(topology_from_json(cfg.json()["topology"]));
    HardwareSpec hw = HardwareSpec::from_config(cfg);
    Program program = build_program(cfg, topo, hw);
    SimReport r = simulate(program, topo, hw, SimOptions::from_config(cfg));
    double allreduce = 0;  // longest group of every gradient all-reduce, summed
    for (const auto& [index, st] : r.collectives)
      if (program.ops[index].collective.kind == CollectiveKind::AllReduce &&
          program.ops[index].phase == Phase::Backward)
        allreduce += st.longest.seconds();
    return std::vector<double>{r.step_time.seconds(), allreduce};
  });
  return {v.at(0), v.at(1)};
}
}  // namespace

TEST_CASE("more ICI bandwidth never slows a step") {
  double previous = 1e9;
  for (double bw : {25.0, 50.0, 100.0, 200.0}) {
    auto s = small_bert("4x4", 32);
    s["hardware"] = {{"ici", {{"bandwidth_GBps", bw}}}};
    const double t = step_of(s).step_s;
    INFO("bandwidth " << bw);
    CHECK(t <= previous * (1 + 1e-9));
    previous = t;
  }
}

TEST_CASE("a faster clock (more FLOP/s) never slows a step") {
  double previous = 1e9;
  for (double mhz : {470.0, 940.0, 1880.0}) {
    auto s = small_bert("2x2:wrap=0,0", 8);
    s["hardware"] = {{"clock_MHz", mhz}};
    const double t = step_of(s).step_s;
    INFO("clock " << mhz);
    CHECK(t < previous);
    previous = t;
  }
}

TEST_CASE("at a fixed batch per core more chips never shorten the gradient all-reduce") {
  // Tori of growing size (a 2-chip dimension has no wrap link, so it is left out: a 4-ring
  // has twice its bandwidth per chip and would rightly be faster).
  double previous = 0;
  for (const char* topo : {"4x4", "8x4", "8x8", "16x8"}) {
    Topology t(parse_topology(topo));
    auto s = small_bert(topo, 2 * t.num_chips());  // one sequence per core
    const double ar = step_of(s).allreduce_s;
    INFO("topology " << topo);
    CHECK(ar > 0);
    CHECK(ar >= previous * (1 - 1e-9));
    previous = ar;
  }
}
