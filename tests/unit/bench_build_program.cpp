// Benchmark, not a test (hidden: run `build/bin/tpusim_unit_tests "[.benchmark]"`): wall time of
// building the Programs of the largest shipped studies. The brief asks for well under 100 ms.
#include <catch2/catch.hpp>
#include <chrono>
#include <iostream>

#include "model_study.hpp"

using namespace tpusim;

TEST_CASE("benchmark: build the Programs of the 4096-chip studies", "[.benchmark]") {
  for (const char* study : {"bert_large_4096", "bert_large_4096_no_wus", "transformer_big_4096"}) {
    const Config cfg = load_config_file(config_dir() + "/studies/" + study + ".json");
    double best_ms = 1e9;
    std::size_t ops = 0;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const Program p = tpusim::test::program_of(cfg);
      const auto t1 = std::chrono::steady_clock::now();
      best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(t1 - t0).count());
      ops = p.ops.size();
    }
    std::cout << study << ": " << ops << " ops, built in " << best_ms << " ms (best of 5)\n";
  }
}
