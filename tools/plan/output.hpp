#pragma once
// What `tpusim plan` reports: the top K, the Pareto front, the rejected classes, the study's
// own layout and the winner, as JSON (DIR/plan.json, `--json`) and as text.
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

namespace tpusim::cli {

constexpr int kPlanSchemaVersion = 1;

/// A rate with at least four significant digits (ex/s/chip of 0.0123 is "0.01230").
std::string rate_text(double v);

/// Prints the plan JSON (as built by `tpusim plan`) for a person.
void print_plan(std::ostream& out, const nlohmann::json& plan);

}  // namespace tpusim::cli
