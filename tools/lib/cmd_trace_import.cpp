// tpusim trace import PROFILE --out TRACE: a TPU profile (Chrome trace events) as a trace.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "models/trace/file_bytes.hpp"
#include "models/trace/mesh_groups.hpp"
#include "models/trace/profile_import.hpp"
#include "models/trace/trace_format.hpp"
#include "tools/lib/commands.hpp"
#include "tools/lib/trace_command_group.hpp"

namespace tpusim::cli {
namespace {

struct ImportArgs {
  std::string profile, out, sizes, mesh;
  trace::ImportOptions options;
};

/// A trace without a global batch replays with throughput 0: say so where the user can fix it.
void warn_if_batch_unknown(const Program& program) {
  if (program.examples_per_step == 0)
    spdlog::warn(
        "no --examples-per-step: the trace's global batch is unknown, so replay reports "
        "throughput (examples per second) as 0; give --examples-per-step N to know it");
}

void run_import(const ImportArgs& a) {
  trace::ImportOptions options = a.options;
  if (!a.mesh.empty()) options.mesh = trace::parse_mesh_axes(a.mesh, "--mesh");
  if (!a.sizes.empty())
    options.overrides = trace::read_collective_overrides(
        trace::parse_json_text(trace::read_file_maybe_gzip(a.sizes), a.sizes), a.sizes);
  const auto result = trace::import_profile_file(a.profile, options);
  for (const auto& w : result.warnings) spdlog::warn("{}", w);
  warn_if_batch_unknown(result.program);
  nlohmann::json recorded_on = {
      {"source", "tpusim trace import"},
      {"profile", a.profile},
      {"representative_device", "/device:TPU:" + std::to_string(result.representative_tpu)},
      {"tpu_devices_in_profile", result.tpu_devices}};
  write_trace(result.program, a.out, recorded_on);
  std::cout << "imported " << result.program.ops.size() << " ops ("
            << result.program.num_collectives()
            << " collectives) from /device:TPU:" << result.representative_tpu << "; "
            << result.matching_devices << " of " << result.tpu_devices
            << " TPU devices run the same op sequence; mesh "
            << trace::describe_mesh(result.program.mesh) << " -> " << a.out << "\n";
}

const CommandRegistrar kRegister{[](CLI::App& app) {
  auto* cmd = trace_command_group(app)->add_subcommand(
      "import",
      "Import a TensorFlow/JAX TPU profile (Chrome trace events, .json or .json.gz) as a trace");
  auto a = std::make_shared<ImportArgs>();
  cmd->add_option("PROFILE", a->profile, "profile file: trace.json or trace.json.gz")->required();
  cmd->add_option("--out", a->out, "trace to write (.json, or .json.gz to compress)")->required();
  cmd->add_option("--sizes", a->sizes,
                  "JSON map op name -> bytes (or {bytes, dtype, axes, replica_groups, shift, "
                  "wrap}) for collectives the profile does not size");
  cmd->add_option("--mesh", a->mesh,
                  "the job's device mesh, e.g. data=8 or data=2,model=4 (default: data = TPU "
                  "devices in the profile)");
  cmd->add_option("--model", a->options.model, "model name to record")->capture_default_str();
  cmd->add_option("--examples-per-step", a->options.examples_per_step, "global batch of the step")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--device", a->options.device,
                  "TPU id whose ops form the program (default: lowest with ops)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--step", a->options.step,
                  "import only step K (0-based) of the device's \"Steps\" track")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--ops-thread", a->options.ops_thread, "device thread whose events are ops")
      ->capture_default_str();
  cmd->callback([a] { run_import(*a); });
}};

}  // namespace
}  // namespace tpusim::cli
