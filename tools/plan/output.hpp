#pragma once
// What `tpusim plan` reports: the top K, the Pareto front, the rejected classes, the study's
// own layout and the winner, as JSON (DIR/plan.json, `--json`) and as text.
#include <iosfwd>
#include <nlohmann/json.hpp>

namespace tpusim::cli {

constexpr int kPlanSchemaVersion = 1;

/// Prints the plan JSON (as built by `tpusim plan`) for a person.
void print_plan(std::ostream& out, const nlohmann::json& plan);

}  // namespace tpusim::cli
