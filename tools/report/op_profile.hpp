#pragma once
// An op profile as XProf's op profile and roofline tools show one: per op and per layer the
// time, FLOPs, HBM bytes, achieved FLOP/s and GB/s and the resource that bounds it; the step's
// breakdown; the chip's roofs. Written as JSON and as one self-contained HTML page
// (profile_page.cpp) by `tpusim profile` and `tpusim run --profile DIR` (docs/profile.md).
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "models/program.hpp"
#include "sim/run/simulation.hpp"
#include "tools/study/study.hpp"

namespace tpusim::cli {

constexpr int kProfileSchemaVersion = 1;

/// The layer an op belongs to: its name up to and including the first numbered part
/// ("encoder.3.mlp.in.bwd_weight" -> "encoder.3", "stage2.1.conv1" -> "stage2.1"), else its
/// first part ("embedding.lookup" -> "embedding", "loss" -> "loss").
std::string layer_of(const std::string& op_name);

/// The profile of a simulated step: {"schema_version", "study", "model", "layout", "hardware",
/// "chips", "cores", "roofs", "step", "ops" (program order), "layers" (by time), ...}.
nlohmann::json op_profile_json(const Study& study, const Program& program, const SimReport& r);

/// The profile as one HTML page: the JSON inline, a script that draws the roofline, the step's
/// breakdown and the tables; nothing fetched from the network.
std::string op_profile_html(const nlohmann::json& profile);

/// Creates `dir` if needed and writes DIR/profile.json and DIR/profile.html. Throws ConfigError
/// naming `--profile DIR` or the file on failure.
void write_op_profile(const std::string& dir, const nlohmann::json& profile,
                      const std::string& option);

/// The step's breakdown and the `top` longest ops with their rates and bound, as text.
void print_op_profile(std::ostream& out, const nlohmann::json& profile, int top);

}  // namespace tpusim::cli
