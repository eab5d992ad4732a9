#include "tools/run/trace_convert.hpp"

#include <spdlog/spdlog.h>

#include <iostream>

#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "core/units.hpp"
#include "tools/sweep/readable.hpp"
#include "traces/chakra/chakra.hpp"
#include "traces/format/file_bytes.hpp"
#include "traces/format/mesh_groups.hpp"
#include "traces/format/rescale.hpp"
#include "traces/format/trace_format.hpp"
#include "traces/format/trace_summary.hpp"
#include "traces/profile/profile_import.hpp"

namespace tpusim::cli {
namespace {

/// A trace without a global batch replays with throughput 0: say so where the user can fix it.
void warn_if_batch_unknown(const Program& program) {
  if (program.examples_per_step == 0)
    spdlog::warn(
        "no --examples-per-step: the trace's global batch is unknown, so replay reports "
        "throughput (examples per second) as 0; give --examples-per-step N to know it");
}

// --format chakra: a directory of Chakra rank files (docs/chakra.md).
void run_import_chakra(const ImportArgs& a) {
  for (const std::string& only : a.profile_only_given)
    throw ConfigError(only, "applies to --format profile only, not to --format chakra");
  trace::ChakraImportOptions options;
  if (!a.mesh.empty()) options.mesh = trace::parse_mesh_axes(a.mesh, "--mesh");
  if (a.model_given) options.model = a.options.model;
  if (a.examples_per_step_given) options.examples_per_step = a.options.examples_per_step;
  const auto result = trace::read_chakra(a.profile, options);
  for (const auto& w : result.warnings) spdlog::warn("{}", w);
  warn_if_batch_unknown(result.trace.program);
  write_trace(result.trace.program, a.out, result.trace.recorded_on);
  std::cout << "imported " << result.trace.program.ops.size() << " ops ("
            << result.trace.program.num_collectives() << " collectives) from " << result.ranks
            << " Chakra ranks in " << a.profile << "; mesh "
            << trace::describe_mesh(result.trace.program.mesh) << " -> " << a.out << "\n";
}

void run_import_profile(const ImportArgs& a) {
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

void print_text(const std::string& path, const trace::TraceFile& t,
                const nlohmann::ordered_json& s) {
  const Program& p = t.program;
  std::cout << "trace: " << path << " (" << trace::kFormatName << " v" << trace::kFormatVersion
            << ")\n"
            << "model: " << p.model << ", examples per step: " << p.examples_per_step << "\n"
            << "mesh: " << trace::describe_mesh(p.mesh) << " (" << s["devices"].get<long long>()
            << " devices)\n";
  if (t.recorded_on.is_object()) {
    // Scalars as they are; objects (the whole study config can be one) only by name or size.
    std::cout << "recorded on:";
    for (const auto& [key, value] : t.recorded_on.items()) {
      std::string shown = value.dump();
      if (key == "topology" && value.contains("dims"))
        shown = value["dims"].dump();
      else if (value.is_object() && value.contains("name"))
        shown = value["name"].dump();
      else if (value.is_object())
        shown = "{" + std::to_string(value.size()) + " keys}";
      std::cout << " " << key << "=" << shown;
    }
    std::cout << "\n";
  }
  std::cout << "ops: " << s["ops"].get<long long>() << " (" << s["compute_ops"].get<long long>()
            << " compute, " << s["collectives"].get<long long>() << " collectives), "
            << s["dependencies"].get<long long>() << " dependencies\n"
            << "compute: " << s["flops"].get<double>() << " FLOPs, HBM "
            << format_bytes(s["hbm_bytes_read"].get<double>()) << " read, "
            << format_bytes(s["hbm_bytes_written"].get<double>()) << " written per core; "
            << s["measured_ops"].get<long long>() << " ops with measured durations totalling "
            << s["measured_ns"].get<double>() / 1e3 << " us\n";
  for (const char* key : {"collectives_by_kind", "collectives_by_group"}) {
    std::cout << (std::string(key) == "collectives_by_kind" ? "collectives by kind:\n"
                                                            : "collectives by group:\n");
    for (const auto& [name, b] : s[key].items())
      std::cout << "  " << name << ": " << count_of(b["count"].get<long long>(), "op") << ", "
                << format_bytes(b["bytes"].get<double>()) << " per core\n";
  }
}

}  // namespace

void import_trace(const ImportArgs& a) {
  check_output_path(a.out, "--out");
  if (a.format == "chakra")
    run_import_chakra(a);
  else
    run_import_profile(a);
}

void print_trace_info(const std::string& path, bool as_json) {
  const trace::TraceFile t = trace::read_trace_file(path);
  auto s = trace::summarize(t.program);
  if (as_json) {
    s["recorded_on"] = t.recorded_on;
    std::cout << s.dump(2) << "\n";
  } else {
    print_text(path, t, s);
  }
}

void rescale_trace(const std::string& in, const std::string& mesh, const std::string& out) {
  check_output_path(out, "--out");
  trace::TraceFile t = trace::read_trace_file(in);
  const auto axes = trace::parse_mesh_axes(mesh, "--mesh");
  Program rescaled;
  try {
    rescaled = rescale(t.program, axes);
  } catch (const ConfigError& e) {  // name the file in front of "ops[8] (...)"
    std::vector<Problem> problems = e.problems();
    for (auto& p : problems) p.where = in + ": " + p.where;
    throw ConfigError(problems);
  }
  nlohmann::json recorded_on = t.recorded_on.is_object() ? t.recorded_on : nlohmann::json::object();
  // The recorded topology no longer fits the rescaled mesh; keep where it came from instead.
  recorded_on.erase("topology");
  recorded_on["rescaled_from"] = trace::describe_mesh(t.program.mesh);
  write_trace(rescaled, out, recorded_on);
  std::cout << "rescaled " << trace::describe_mesh(t.program.mesh) << " -> "
            << trace::describe_mesh(rescaled.mesh) << ": " << out << "\n";
}

}  // namespace tpusim::cli
