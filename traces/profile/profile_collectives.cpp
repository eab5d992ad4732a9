#include "traces/profile/profile_collectives.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "traces/format/mesh_groups.hpp"
#include "traces/profile/profile_events.hpp"

namespace tpusim::trace {
namespace {

// The result shape: the -done event's (it is the collective's result); else the synchronous op's
// or -start's. A -start of all-gather or collective-permute returns a tuple (operand, result, ...):
// its element 1 is the result.
std::optional<std::vector<ArrayShape>> result_shape(const CollectiveEvents& ev,
                                                    const std::string& file) {
  if (ev.done)
    if (auto s = event_result_shape(file, *ev.done)) return s;
  auto s = event_result_shape(file, *ev.first);
  const bool tuple_start = ev.done && (ev.kind == CollectiveKind::AllGather ||
                                       ev.kind == CollectiveKind::CollectivePermute);
  if (s && tuple_start && s->size() >= 2) return std::vector<ArrayShape>{(*s)[1]};
  return s;
}

std::string problem_groups(const std::vector<std::vector<int>>& groups, long long devices) {
  std::vector<int> all;
  for (const auto& g : groups) {
    if (g.empty()) return "a group is empty";
    all.insert(all.end(), g.begin(), g.end());
  }
  std::sort(all.begin(), all.end());
  if (!all.empty() && all.back() >= devices)
    return "they name device " + std::to_string(all.back()) + " but the mesh has " +
           std::to_string(devices);
  if (std::adjacent_find(all.begin(), all.end()) != all.end()) return "a device is in two groups";
  if (static_cast<long long>(all.size()) != devices)
    return "they cover " + std::to_string(all.size()) + " of the mesh's " +
           std::to_string(devices) + " devices";
  return "";
}

// Sets c.axes or c.replica_groups from explicit groups: axes if they follow the mesh.
void set_groups(CollectiveSpec& c, const std::vector<std::vector<int>>& groups,
                const std::string& where, const CollectiveContext& ctx) {
  if (groups.empty()) return;  // XLA: no groups listed means every device
  const std::string problem = problem_groups(groups, ctx.devices);
  if (!problem.empty())
    throw ConfigError(where, "replica groups do not fit the mesh (" + describe_mesh(ctx.mesh) +
                                 "): " + problem + "; give the job's mesh with --mesh");
  const bool ordered = c.kind == CollectiveKind::CollectivePermute;
  if (auto axes = axes_matching_groups(ctx.mesh, groups, ordered))
    c.axes = *axes;
  else
    c.replica_groups = groups;
}

// The group from --sizes (axes or replica_groups), else from the HLO's replica_groups; false
// when neither gives one (the collective then spans every device).
bool resolve_group(CollectiveSpec& c, const CollectiveEvents& ev, const CollectiveOverride* o,
                   const std::string& name, const std::string& where, CollectiveContext& ctx) {
  if (o && o->axes) {
    for (const auto& a : *o->axes)
      if (std::none_of(ctx.mesh.begin(), ctx.mesh.end(),
                       [&](const MeshAxis& m) { return m.name == a; }))
        throw ConfigError("--sizes " + name + ".axes", "'" + a + "' is not an axis of the mesh (" +
                                                           describe_mesh(ctx.mesh) + ")");
    c.axes = *o->axes;
    return true;
  }
  if (o && o->replica_groups) {
    set_groups(c, *o->replica_groups, "--sizes " + name + ".replica_groups", ctx);
    return true;
  }
  if (c.kind != CollectiveKind::CollectivePermute) {
    std::optional<std::string> text = event_hlo_attribute(ctx.file, *ev.first, "replica_groups");
    if (!text && ev.done) text = event_hlo_attribute(ctx.file, *ev.done, "replica_groups");
    if (text) {
      auto groups = parse_int_groups(*text);
      if (!groups)
        throw ConfigError(where, "cannot read replica_groups '" + text->substr(0, 60) +
                                     "'; expected {{0,1},{2,3}}, or give the group in --sizes");
      set_groups(c, *groups, where, ctx);
      return true;
    }
  }
  return false;
}

// A collective-permute's shift: from --sizes, else from its source_target_pairs (which also
// give its axes: true then).
bool resolve_permute(CollectiveSpec& c, const CollectiveEvents& ev, const CollectiveOverride* o,
                     const std::string& name, const std::string& where,
                     const CollectiveContext& ctx) {
  if (o && o->shift) {
    c.shift = *o->shift;
    c.wrap = o->wrap.value_or(false);
    return false;
  }
  auto text = event_hlo_attribute(ctx.file, *ev.first, "source_target_pairs");
  auto pairs = text ? parse_int_groups(*text) : std::nullopt;
  const auto found = pairs ? permute_from_pairs(ctx.mesh, *pairs) : std::nullopt;
  if (!found)
    throw ConfigError(
        where, std::string(text ? "its source_target_pairs are not a uniform shift along mesh axes"
                                : "no source_target_pairs in its args or long_name") +
                   "; give {\"bytes\": ..., \"axes\": [...], \"shift\": N, \"wrap\": true|false} "
                   "for '" +
                   name + "' in --sizes");
  c.axes = found->axes;
  c.shift = found->shift;
  c.wrap = found->wrap;
  return true;
}

// The bytes per core: from --sizes, the events' args, else the result shape (a reduce-scatter's
// result is one core's shard, times the group size).
double resolve_bytes(const CollectiveSpec& c, const CollectiveEvents& ev,
                     const CollectiveOverride* o,
                     const std::optional<std::vector<ArrayShape>>& shape, const std::string& name,
                     const std::string& where, const CollectiveContext& ctx) {
  std::optional<double> bytes = o ? o->bytes : std::nullopt;
  if (!bytes) bytes = arg_non_negative(ctx.file, *ev.first, "bytes");
  if (!bytes && ev.done) bytes = arg_non_negative(ctx.file, *ev.done, "bytes");
  if (!bytes && shape) {
    double total = 0;
    for (const auto& a : *shape) total += a.bytes();
    if (c.kind == CollectiveKind::ReduceScatter) {  // the result is one core's shard
      long long group = 1;
      if (!c.replica_groups.empty()) {
        group = static_cast<long long>(c.replica_groups[0].size());
      } else if (c.axes.empty()) {
        group = ctx.devices;
      } else {
        for (const auto& m : ctx.mesh)
          if (std::find(c.axes.begin(), c.axes.end(), m.name) != c.axes.end()) group *= m.size;
      }
      total *= static_cast<double>(group);
    }
    bytes = total;
  }
  if (!bytes)
    throw ConfigError(
        where,
        "no size: its args have none of bytes, shape, shape_with_layout or a long_name "
        "with a result shape; give it in --sizes as {\"" +
            name + "\": BYTES}");
  return *bytes;
}

}  // namespace

CollectiveSpec resolve_collective(const CollectiveEvents& ev, CollectiveContext& ctx) {
  CollectiveSpec c;
  c.kind = ev.kind;
  const std::string& name = ev.first->name;
  const std::string where = event_where(ctx.file, *ev.first);
  const CollectiveOverride* o = nullptr;
  if (auto it = ctx.overrides->find(name); it != ctx.overrides->end()) {
    o = &it->second;
    ctx.used_overrides.insert(name);
  }
  const auto shape = result_shape(ev, ctx.file);

  // Group first: a reduce-scatter's size from its (shard) shape needs the group size.
  bool group_known = resolve_group(c, ev, o, name, where, ctx);
  if (c.kind == CollectiveKind::CollectivePermute && resolve_permute(c, ev, o, name, where, ctx))
    group_known = true;
  if (!group_known) ++ctx.assumed_all_devices;

  c.bytes = resolve_bytes(c, ev, o, shape, name, where, ctx);

  std::optional<DType> dtype = o ? o->dtype : std::nullopt;
  if (!dtype && shape && !shape->empty()) dtype = dtype_for_xla((*shape)[0].element_type);
  if (!dtype) ++ctx.assumed_dtype;
  c.dtype = dtype.value_or(DType::BF16);
  return c;
}

}  // namespace tpusim::trace
