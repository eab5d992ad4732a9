// Sweep axes as --set sets them (topology.slices over a topology given by name), and the
// problems many points share folded into one line.
#include <catch2/catch.hpp>

#include "tests/cli/sweep_fixture.hpp"

using nlohmann::json;

TEST_CASE("sweep: topology.slices is an axis over a named topology, as --set sets it") {
  SweepScratch s;
  // BERT-Large on slices of 2x2 v3 chips, data parallel over every slice: 8 examples per slice.
  json base = small_bert_study();
  base["workload"]["global_batch"] = 8;
  base["parallelism"] = {{"weight_update_sharding", false}};
  const auto sweep =
      s.write("s.json", {{"base", base},
                         {"axes",
                          {{{"name", "slices"}, {"path", "topology.slices"}, {"values", {1, 2}}},
                           {{"path", "parallelism.slices"}, {"expr", "slices"}},
                           {{"path", "workload.global_batch"}, {"expr", "8 * slices"}}}}});
  auto r = run_tpusim({"sweep", sweep, "-j", "2", "--out", s.path("out")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto t = results_of(s.path("out"));
  REQUIRE(t.rows.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const int slices = static_cast<int>(*t.number(i, "slices"));
    // The named 2x2 slice kept (4 chips each), times the slices.
    CHECK(*t.number(i, "chips") == 4 * slices);
    // The same point as `tpusim run` with --set.
    auto run = run_tpusim(with_sets({"run", s.write("base.json", base), "--json"},
                                    {"topology.slices=" + std::to_string(slices),
                                     "parallelism.slices=" + std::to_string(slices),
                                     "workload.global_batch=" + std::to_string(8 * slices)}));
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    const json j = json::parse(run.out);
    CHECK(j["chips"] == 4 * slices);
    CHECK(*t.number(i, "step_time_ms") == Approx(j["step_time_ms"].get<double>()).epsilon(1e-8));
  }
}

TEST_CASE("sweep: a problem that several points share is one line naming them") {
  SweepScratch s;
  // parallelism.model 4 and 8 do not divide BERT's 30522-word vocabulary; 1 and 2 do. Four of
  // the eight points (two bucket sizes each) share each problem.
  const auto sweep =
      s.write("s.json", {{"base", small_bert_study()},
                         {"axes",
                          {{{"path", "parallelism.model"}, {"values", {1, 2, 4, 8}}},
                           {{"path", "parallelism.grad_bucket_MiB"}, {"values", {8, 32}}}}}});
  auto r = run_tpusim({"sweep", sweep, "--out", s.path("out")});
  CHECK(r.exit_code == 2);
  INFO(r.err);
  // Points 4-5 (model 4) and 6-7 (model 8) fail with messages that name their degree: one line
  // each, not one per point.
  CHECK(r.err_lines() == 2);
  CHECK_THAT(r.err, Catch::Contains("2 of 8 points (4-5; e.g. [parallelism.model=4 "
                                    "parallelism.grad_bucket_MiB=8]): parallelism.model"));
  CHECK_THAT(r.err, Catch::Contains("2 of 8 points (6-7; e.g. [parallelism.model=8"));
}
