// Ranking and pruning rules of `tpusim plan` (tools/plan/search.hpp), and the checks' progress
// line (tools/plan/candidates.hpp).
#include <catch2/catch.hpp>
#include <cmath>

#include "core/errors.hpp"
#include "tools/plan/candidates.hpp"
#include "tools/plan/search.hpp"

using namespace tpusim;
using namespace tpusim::plan;

namespace {
Evaluated sim(std::size_t id, double step_ms, double peak, double batch = 64, double chips = 16) {
  return {id, step_ms, peak, batch, chips, 0, 0, 0, step_ms};
}
Evaluated bound(double bound_ms, double peak, double batch = 64, double chips = 16) {
  return {99, bound_ms, peak, batch, chips, 0, 0, 0, std::nullopt};
}
}  // namespace

TEST_CASE("plan search: objectives by name, an unknown one names --objective") {
  CHECK(parse_objective("step_time") == Objective::StepTime);
  CHECK(parse_objective("examples_per_s_per_chip") == Objective::ExamplesPerSPerChip);
  CHECK_THROWS_WITH(parse_objective("speed"),
                    Catch::Contains("--objective speed") && Catch::Contains("step_time"));
}

TEST_CASE("plan search: MFU and tokens per second per chip, and their cost") {
  CHECK(parse_objective("mfu") == Objective::Mfu);
  CHECK(parse_objective("tokens_per_s_per_chip") == Objective::TokensPerSPerChip);
  CHECK(std::string(to_string(Objective::Mfu)) == "mfu");
  Evaluated e = sim(0, 20, 1, 512, 16);
  e.tokens_per_step = 512 * 2048.0;
  e.peak_flops_per_chip = 275e12;
  e.model_flops = 0.4 * 275e12 * 16 * 0.020;  // 40 % of 16 chips' peak over 20 ms
  CHECK(objective_value(Objective::Mfu, e, 20) == Approx(0.4));
  CHECK(objective_value(Objective::TokensPerSPerChip, e, 20) == Approx(512 * 2048 / 0.020 / 16));
  // Lower cost is better: the inverse of the rate (times 1000, chip-ms).
  CHECK(cost(Objective::Mfu, e, 20) == Approx(1e3 / 0.4));
  CHECK(cost(Objective::Mfu, e, 10) < cost(Objective::Mfu, e, 20));
  CHECK(cost(Objective::TokensPerSPerChip, e, 20) == Approx(20.0 * 16 / (512 * 2048.0)));
  // A model without tokens or model FLOPs never wins on them.
  CHECK(cost(Objective::Mfu, sim(0, 20, 1, 512, 16), 20) == HUGE_VAL);
}

TEST_CASE("plan search: throughput per chip is batch / step time / chips") {
  const Evaluated e = sim(0, 20, 1, 512, 16);
  CHECK(objective_value(Objective::ExamplesPerSPerChip, e, 20) == Approx(512 / 0.020 / 16));
  CHECK(objective_value(Objective::StepTime, e, 20) == 20);
  // Lower cost is better for both: chip-ms per example.
  CHECK(cost(Objective::ExamplesPerSPerChip, e, 20) == Approx(20.0 * 16 / 512));
}

TEST_CASE("plan search: skipped only if out of the top K and dominated in time and memory") {
  Pruner p(Objective::StepTime, 1);
  CHECK_FALSE(p.dominated_by(bound(12, 6)));  // nothing simulated yet
  p.add_simulated(sim(0, 10, 5));
  CHECK(p.dominated_by(bound(12, 6)) == std::optional<std::size_t>(0));
  CHECK_FALSE(p.dominated_by(bound(12, 4)));  // less memory: may be on the Pareto front
  CHECK_FALSE(p.dominated_by(bound(9, 6)));   // may be faster
  Pruner two(Objective::StepTime, 2);
  two.add_simulated(sim(0, 10, 5));
  CHECK_FALSE(two.dominated_by(bound(12, 6)));  // may be second
  two.add_simulated(sim(1, 11, 7));
  CHECK(two.dominated_by(bound(12, 6)));
}

TEST_CASE("plan search: a layout still running can skip another only from its lower bound") {
  // Top 2, one layout simulated (10 ms, 5 bytes); a second runs with a lower bound of 11 ms.
  Pruner p(Objective::StepTime, 2);
  p.add_simulated(sim(0, 10, 5));
  const std::vector<Evaluated> running{bound(11, 7)};
  // A bound of 10.5 ms: the running layout, at least 11 ms, cannot be below it.
  CHECK_FALSE(p.could_be_dominated(bound(10.5, 6), running));
  // A bound of 12 ms: if the running layout takes less than 12 ms it is skipped.
  CHECK(p.could_be_dominated(bound(12, 6), running));
  // Whatever it takes then: at 11.5 ms skipped, at 12.5 ms not.
  Pruner fast = p, slow = p;
  fast.add_simulated(sim(1, 11.5, 7));
  slow.add_simulated(sim(1, 12.5, 7));
  CHECK(fast.dominated_by(bound(12, 6)));
  CHECK_FALSE(slow.dominated_by(bound(12, 6)));
}

TEST_CASE("plan search: top K by cost and the Pareto front of cost and memory") {
  std::vector<Evaluated> all{sim(0, 13, 6), sim(1, 10, 5), bound(1, 1), sim(2, 15, 1),
                             sim(3, 12, 4)};
  CHECK(top_k(Objective::StepTime, all, 2) == std::vector<std::size_t>{1, 4});
  CHECK(top_k(Objective::StepTime, all, 10).size() == 4);  // the unsimulated one is not ranked
  // 13 ms needs more memory than the faster 10 ms: not on the front.
  CHECK(pareto_front(Objective::StepTime, all) == std::vector<std::size_t>{1, 4, 3});
}

namespace {
/// What a CheckProgress of `total` layouts writes after `checked` of them, then when it ends.
std::string check_progress_text(std::size_t total, std::size_t checked, bool terminal) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  {
    tpusim::cli::CheckProgress p(total, terminal, f);
    for (std::size_t i = 0; i < checked; ++i) p.checked();
  }
  std::rewind(f);
  std::string text;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) text += static_cast<char>(c);
  std::fclose(f);
  return text;
}
}  // namespace

TEST_CASE("plan search: the check's progress line on a terminal, nothing when piped") {
  // The first layout checked draws the line at once; the end erases it.
  const std::string shown = check_progress_text(4, 1, true);
  CHECK(shown.find("checking layouts, 1 of 4") != std::string::npos);
  CHECK(shown.find("ETA") != std::string::npos);
  CHECK(shown.size() >= 4);
  CHECK(shown.substr(shown.size() - 4) == "\r\033[K");
  CHECK(check_progress_text(4, 4, false).empty());
  CHECK(check_progress_text(4, 0, true).empty());  // nothing checked, nothing drawn
}
