#include "traces/format/trace_summary.hpp"

namespace tpusim::trace {
namespace {
std::string group_label(const CollectiveSpec& c) {
  if (!c.replica_groups.empty()) return "replica groups";
  if (c.axes.empty()) return "all devices";
  std::string s;
  for (const auto& a : c.axes) s += (s.empty() ? "" : "+") + a;
  return s;
}
void add(nlohmann::ordered_json& bucket, const std::string& key, double bytes) {
  auto& b = bucket[key];
  if (b.is_null()) b = {{"count", 0}, {"bytes", 0.0}};
  b["count"] = b["count"].get<long long>() + 1;
  b["bytes"] = b["bytes"].get<double>() + bytes;
}
}  // namespace

nlohmann::ordered_json summarize(const Program& p) {
  long long devices = 1, deps = 0, measured = 0;
  double flops = 0, read = 0, written = 0, measured_ns = 0;
  nlohmann::ordered_json by_kind = nlohmann::ordered_json::object();
  nlohmann::ordered_json by_group = nlohmann::ordered_json::object();
  nlohmann::ordered_json mesh = nlohmann::ordered_json::array();
  for (const auto& a : p.mesh) {
    devices *= a.size;
    mesh.push_back({{"name", a.name}, {"size", a.size}});
  }
  for (const auto& op : p.ops) {
    deps += static_cast<long long>(op.deps.size());
    if (op.is_collective) {
      add(by_kind, to_string(op.collective.kind), op.collective.bytes);
      add(by_group, group_label(op.collective), op.collective.bytes);
      continue;
    }
    flops += op.compute.flops;
    read += op.compute.bytes_read;
    written += op.compute.bytes_written;
    if (op.compute.measured_ns) {
      ++measured;
      measured_ns += *op.compute.measured_ns;
    }
  }
  const auto collectives = static_cast<long long>(p.num_collectives());
  return {{"model", p.model},
          {"examples_per_step", p.examples_per_step},
          {"mesh", mesh},
          {"devices", devices},
          {"ops", p.ops.size()},
          {"compute_ops", static_cast<long long>(p.ops.size()) - collectives},
          {"collectives", collectives},
          {"dependencies", deps},
          {"flops", flops},
          {"hbm_bytes_read", read},
          {"hbm_bytes_written", written},
          {"measured_ops", measured},
          {"measured_ns", measured_ns},
          {"collectives_by_kind", by_kind},
          {"collectives_by_group", by_group}};
}

}  // namespace tpusim::trace
