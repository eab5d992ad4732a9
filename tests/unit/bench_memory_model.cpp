// Benchmark, not a test (hidden: run `build/bin/tpusim_unit_tests "[.benchmark]"`): wall time of
// the memory analysis of the 4096-chip studies, alone and with the Program build, as the layout
// planner calls it (tools/plan/evaluate.cpp). The brief asks for well under 100 ms.
#include <catch2/catch.hpp>
#include <chrono>
#include <iostream>

#include "model_study.hpp"
#include "models/memory/memory_model.hpp"

using namespace tpusim;

TEST_CASE("benchmark: memory analysis of the 4096-chip studies", "[.benchmark]") {
  using ms = std::chrono::duration<double, std::milli>;
  for (const char* study : {"bert_large_4096", "bert_large_4096_no_wus", "transformer_big_4096"}) {
    const Config cfg = load_config_file(config_dir() + "/studies/" + study + ".json");
    const Topology topo(topology_from_json(cfg.json().at("topology")));
    const HardwareSpec hw = HardwareSpec::from_config(cfg);
    double best_analysis = 1e9, best_total = 1e9;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const Program p = build_program(cfg, topo, hw);
      const auto t1 = std::chrono::steady_clock::now();
      const MemoryProfile m = analyze_memory(p, hw.hbm_bytes_per_core);
      const auto t2 = std::chrono::steady_clock::now();
      REQUIRE(m.known);
      best_analysis = std::min(best_analysis, ms(t2 - t1).count());
      best_total = std::min(best_total, ms(t2 - t0).count());
    }
    std::cout << study << ": analysis " << best_analysis << " ms, build + analysis " << best_total
              << " ms (best of 5)\n";
  }
}
