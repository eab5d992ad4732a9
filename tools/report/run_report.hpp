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

/// "data=8192 model=1 bn=8 wus=off": the layout, from the Program's mesh and the study, in the
/// vocabulary of `tpusim plan`'s labels (data: all data replicas; bn: cores per batch-norm group).
std::string layout_string(const Program& program, const Config& cfg);

/// The interval of the progress line of a long run (SimOptions::progress_interval_s): when
/// stderr is a terminal, 1 s or the environment's TPUSIM_PROGRESS_INTERVAL_S; else 0 (nothing
/// when piped or in a sweep's point). A TPUSIM_PROGRESS_INTERVAL_S that is not a number of
/// seconds from 0.01 to 3600 throws ConfigError naming it, on a terminal or not.
double progress_interval_s();

nlohmann::json make_report(const Study& study, const Program& program, const SimReport& r,
                           int top_n = 10);
/// Prints the report as text; with `op_classes` also the compute by op class (kind and dtype:
/// ops, FLOPs, HBM bytes and time per core), which the JSON always holds.
void print_report(std::ostream& out, const nlohmann::json& report, bool op_classes = false);

}  // namespace tpusim::cli
