#pragma once
// The report of one run (or replay): JSON with schema_version and units in every field name,
// and the same as readable text. Documented in docs/report.md.
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "models/program.hpp"
#include "sim/run/simulation.hpp"
#include "tools/study/study.hpp"

namespace tpusim::cli {

constexpr int kReportSchemaVersion = 1;

/// "data=4096 model=2 spatial=1 wus=on": the layout, from the Program's mesh and the study.
std::string layout_string(const Program& program, const Config& cfg);

nlohmann::json make_report(const Study& study, const Program& program, const SimReport& r,
                           int top_n = 10);
/// Prints the report as text; with `op_classes` also the compute by op class (kind and dtype:
/// ops, FLOPs, HBM bytes and time per core), which the JSON always holds.
void print_report(std::ostream& out, const nlohmann::json& report, bool op_classes = false);

}  // namespace tpusim::cli
