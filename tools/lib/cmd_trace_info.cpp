// tpusim trace info TRACE: what a trace holds (ops, collectives, bytes, mesh).
#include <CLI/CLI.hpp>
#include <iostream>

#include "core/units.hpp"
#include "models/trace/mesh_groups.hpp"
#include "models/trace/trace_format.hpp"
#include "models/trace/trace_summary.hpp"
#include "tools/lib/commands.hpp"
#include "tools/lib/readable.hpp"
#include "tools/lib/trace_command_group.hpp"

namespace tpusim::cli {
namespace {

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

const CommandRegistrar kRegister{[](CLI::App& app) {
  auto* cmd = trace_command_group(app)->add_subcommand(
      "info", "Summarise a trace: ops, collectives, bytes, mesh");
  auto path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("TRACE", *path, "trace file (.json or .json.gz)")->required();
  cmd->add_flag("--json", *as_json, "print the summary as JSON");
  cmd->callback([=] {
    const trace::TraceFile t = trace::read_trace_file(*path);
    auto s = trace::summarize(t.program);
    if (*as_json) {
      s["recorded_on"] = t.recorded_on;
      std::cout << s.dump(2) << "\n";
    } else {
      print_text(*path, t, s);
    }
  });
}};

}  // namespace
}  // namespace tpusim::cli
