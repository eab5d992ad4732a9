#include "traces/format/rescale.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/errors.hpp"
#include "traces/format/mesh_groups.hpp"
#include "traces/format/trace_format.hpp"

namespace tpusim {
namespace {

std::string groups_text(const std::vector<std::vector<int>>& groups) {
  std::string s = "{";
  for (const auto& g : groups) {
    if (s.size() > 60) return s + "...}";
    s += s.size() > 1 ? ",{" : "{";
    for (std::size_t i = 0; i < g.size(); ++i) s += (i ? "," : "") + std::to_string(g[i]);
    s += "}";
  }
  return s + "}";
}

// examples_per_step follows the data axis: the per-replica batch is part of per-core compute.
std::int64_t rescaled_examples(const Program& p, int old_data, int new_data) {
  if (old_data == new_data || p.examples_per_step == 0) return p.examples_per_step;
  if (p.examples_per_step % old_data != 0)
    throw ConfigError("examples_per_step",
                      std::to_string(p.examples_per_step) +
                          " examples do not divide over the recorded data axis (" +
                          std::to_string(old_data) + "), so the per-replica batch is unknown");
  return p.examples_per_step / old_data * new_data;
}

}  // namespace

Program rescale(const Program& program, const std::vector<MeshAxis>& new_sizes) {
  Program out = program;
  std::vector<std::string> changed;
  int old_data = 1, new_data = 1;
  long long devices = 1;
  for (const auto& want : new_sizes) {
    auto it = std::find_if(out.mesh.begin(), out.mesh.end(),
                           [&](const MeshAxis& a) { return a.name == want.name; });
    if (it == out.mesh.end())
      throw ConfigError("--mesh " + want.name, "the trace's mesh (" +
                                                   trace::describe_mesh(program.mesh) +
                                                   ") has no axis '" + want.name + "'");
    if (want.size < 1) throw ConfigError("--mesh " + want.name, "axis size must be at least 1");
    if (want.name == "data") {
      old_data = it->size;
      new_data = want.size;
    }
    if (it->size != want.size) changed.push_back(want.name);
    it->size = want.size;
  }
  for (const auto& a : out.mesh) devices *= a.size;
  if (devices > trace::kMaxMeshDevices)
    throw ConfigError("--mesh", "the rescaled mesh (" + trace::describe_mesh(out.mesh) +
                                    ") has more than " + std::to_string(trace::kMaxMeshDevices) +
                                    " devices");
  if (changed.empty()) return out;
  out.examples_per_step = rescaled_examples(program, old_data, new_data);

  bool sharded_update = false;
  for (std::size_t i = 0; i < out.ops.size(); ++i) {
    Op& op = out.ops[i];
    if (!op.is_collective) continue;
    CollectiveSpec& c = op.collective;
    if (!c.replica_groups.empty()) {
      const bool ordered = c.kind == CollectiveKind::CollectivePermute;
      auto axes = trace::axes_matching_groups(program.mesh, c.replica_groups, ordered);
      if (!axes)
        throw ConfigError(
            "ops[" + std::to_string(i) + "] (" + op.name + ")",
            "its explicit replica groups " + groups_text(c.replica_groups) +
                " do not follow any mesh axes of " + trace::describe_mesh(program.mesh) +
                ", so they cannot be re-derived for " + trace::describe_mesh(out.mesh) +
                "; replay it on the recorded mesh or record the collective over mesh axes");
      c.axes = *axes;
      c.replica_groups.clear();
    }
    const bool spans_changed =
        c.axes.empty() || std::any_of(c.axes.begin(), c.axes.end(), [&](const std::string& a) {
          return std::find(changed.begin(), changed.end(), a) != changed.end();
        });
    sharded_update = sharded_update || (spans_changed && c.kind == CollectiveKind::ReduceScatter);
  }
  const bool has_optimizer = std::any_of(out.ops.begin(), out.ops.end(), [](const Op& o) {
    return !o.is_collective && o.phase == Phase::Optimizer;
  });
  if (sharded_update && has_optimizer)
    spdlog::warn(
        "rescale: the trace shards the weight update over a rescaled axis; its optimizer "
        "ops keep their recorded per-core cost (a shard of the recorded size), which "
        "overstates them when the group grows and understates them when it shrinks");
  return out;
}

}  // namespace tpusim
