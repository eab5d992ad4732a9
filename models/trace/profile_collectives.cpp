#include "models/trace/profile_collectives.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "models/trace/mesh_groups.hpp"
#include "models/trace/profile_events.hpp"

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

// A collective-permute's source_target_pairs as a uniform shift along some mesh axes: every pair
// moves `shift` places within its group, open (wrap=false) or as a ring (wrap=true).
bool permute_from_pairs(CollectiveSpec& c, const std::vector<std::vector<int>>& pairs,
                        const CollectiveContext& ctx) {
  for (const auto& p : pairs)
    if (p.size() != 2 || p[0] >= ctx.devices || p[1] >= ctx.devices) return false;
  if (pairs.empty()) return false;
  for (unsigned subset = 1; subset < (1u << std::min<std::size_t>(ctx.mesh.size(), 16)); ++subset) {
    std::vector<std::string> axes;
    for (std::size_t i = 0; i < ctx.mesh.size(); ++i)
      if (subset & (1u << i)) axes.push_back(ctx.mesh[i].name);
    const auto groups = mesh_axis_groups(ctx.mesh, axes);
    std::vector<int> group(ctx.devices), pos(ctx.devices);
    for (std::size_t g = 0; g < groups.size(); ++g)
      for (std::size_t k = 0; k < groups[g].size(); ++k) {
        group[groups[g][k]] = static_cast<int>(g);
        pos[groups[g][k]] = static_cast<int>(k);
      }
    const long long size = static_cast<long long>(groups[0].size());
    if (size < 2) continue;
    bool same_group = true, open_ok = true, ring_ok = true;
    const long long d0 = pos[pairs[0][1]] - pos[pairs[0][0]];
    const long long r0 = ((d0 % size) + size) % size;
    for (const auto& p : pairs) {
      same_group = same_group && group[p[0]] == group[p[1]];
      const long long d = pos[p[1]] - pos[p[0]];
      open_ok = open_ok && d == d0;
      ring_ok = ring_ok && ((d % size) + size) % size == r0;
    }
    if (!same_group || d0 == 0) continue;
    const long long count = static_cast<long long>(pairs.size());
    const bool all_axes = axes.size() == ctx.mesh.size();
    if (open_ok && count == static_cast<long long>(groups.size()) * (size - std::abs(d0))) {
      c.shift = static_cast<int>(d0);
      c.wrap = false;
    } else if (ring_ok && count == ctx.devices) {
      c.shift = static_cast<int>(r0 > size / 2 ? r0 - size : r0);
      c.wrap = true;
    } else {
      continue;
    }
    c.axes = all_axes ? std::vector<std::string>{} : axes;
    return true;
  }
  return false;
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
  bool group_known = false;
  if (o && o->axes) {
    for (const auto& a : *o->axes)
      if (std::none_of(ctx.mesh.begin(), ctx.mesh.end(),
                       [&](const MeshAxis& m) { return m.name == a; }))
        throw ConfigError("--sizes " + name + ".axes", "'" + a + "' is not an axis of the mesh (" +
                                                           describe_mesh(ctx.mesh) + ")");
    c.axes = *o->axes;
    group_known = true;
  } else if (o && o->replica_groups) {
    set_groups(c, *o->replica_groups, "--sizes " + name + ".replica_groups", ctx);
    group_known = true;
  } else if (c.kind != CollectiveKind::CollectivePermute) {
    std::optional<std::string> text = event_hlo_attribute(ctx.file, *ev.first, "replica_groups");
    if (!text && ev.done) text = event_hlo_attribute(ctx.file, *ev.done, "replica_groups");
    if (text) {
      auto groups = parse_int_groups(*text);
      if (!groups)
        throw ConfigError(where, "cannot read replica_groups '" + text->substr(0, 60) +
                                     "'; expected {{0,1},{2,3}}, or give the group in --sizes");
      set_groups(c, *groups, where, ctx);
      group_known = true;
    }
  }
  if (c.kind == CollectiveKind::CollectivePermute) {
    if (o && o->shift) {
      c.shift = *o->shift;
      c.wrap = o->wrap.value_or(false);
    } else {
      auto text = event_hlo_attribute(ctx.file, *ev.first, "source_target_pairs");
      auto pairs = text ? parse_int_groups(*text) : std::nullopt;
      if (!text || !pairs || !permute_from_pairs(c, *pairs, ctx))
        throw ConfigError(
            where,
            std::string(text ? "its source_target_pairs are not a uniform shift along mesh axes"
                             : "no source_target_pairs in its args or long_name") +
                "; give {\"bytes\": ..., \"axes\": [...], \"shift\": N, \"wrap\": true|false} "
                "for '" +
                name + "' in --sizes");
      group_known = true;
    }
  }
  if (!group_known) ++ctx.assumed_all_devices;

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
  c.bytes = *bytes;

  std::optional<DType> dtype = o ? o->dtype : std::nullopt;
  if (!dtype && shape && !shape->empty()) dtype = dtype_for_xla((*shape)[0].element_type);
  if (!dtype) ++ctx.assumed_dtype;
  c.dtype = dtype.value_or(DType::BF16);
  return c;
}

}  // namespace tpusim::trace
