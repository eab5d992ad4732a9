// Collectives sharing the TensorCore's HBM port and vector unit with compute, as a user sees it
// in `tpusim run --json`.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tpusim.hpp"

namespace {
const char* kCliCoreResourcesStudy = "configs/studies/bert_large_256.json";

nlohmann::json run_json(const std::vector<std::string>& sets) {
  auto r = run_tpusim(with_sets({"run", kCliCoreResourcesStudy, "--json"}, sets));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}
double ms(const nlohmann::json& j, const char* key) { return j[key].get<double>(); }
}  // namespace

TEST_CASE("async collectives overlap compute only partly: compute is slowed by their HBM work") {
  const auto sync = run_json({});
  const auto async = run_json({"hardware.async_collectives=true"});
  // Synchronous: a core never computes while its collectives run, so nothing slows compute.
  CHECK(ms(sync, "compute_slowdown_by_communication_ms") == 0);
  // Async: the slowdown is what compute took beyond its uncontended time, which is the
  // synchronous run's compute time.
  const double slowdown = ms(async, "compute_slowdown_by_communication_ms");
  CHECK(slowdown > 0);
  CHECK(ms(async, "compute_ms") - slowdown == Approx(ms(sync, "compute_ms")).epsilon(1e-6));
  // The step lies between fully hidden communication (the uncontended compute alone) and the
  // synchronous step.
  CHECK(ms(async, "step_time_ms") > ms(sync, "compute_ms"));
  CHECK(ms(async, "step_time_ms") < ms(sync, "step_time_ms"));
  // Without DMA traffic and reductions on the core's resources nothing slows compute.
  const auto free =
      run_json({"hardware.async_collectives=true", "collectives.dma_hbm_traffic=false",
                "collectives.reduction_compute=false"});
  CHECK(ms(free, "compute_slowdown_by_communication_ms") == 0);
  CHECK(ms(free, "step_time_ms") <= ms(async, "step_time_ms"));
}

TEST_CASE("DMA traffic in HBM makes a synchronous step longer, never shorter") {
  const auto with = run_json({});
  const auto without = run_json({"collectives.dma_hbm_traffic=false"});
  CHECK(ms(with, "step_time_ms") >= ms(without, "step_time_ms"));
  CHECK(ms(with, "compute_ms") == Approx(ms(without, "compute_ms")).epsilon(1e-9));
  CHECK(ms(with, "communication_transfer_ms") > ms(without, "communication_transfer_ms"));
}
