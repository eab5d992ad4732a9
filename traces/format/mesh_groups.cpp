#include "traces/format/mesh_groups.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/errors.hpp"
#include "traces/format/trace_format.hpp"

namespace tpusim::trace {

std::vector<std::vector<int>> mesh_axis_groups(const std::vector<MeshAxis>& mesh,
                                               const std::vector<std::string>& axes) {
  const std::size_t n_axes = mesh.size();
  std::vector<long long> stride(n_axes, 1);
  for (int i = static_cast<int>(n_axes) - 2; i >= 0; --i)
    stride[i] = stride[i + 1] * mesh[i + 1].size;
  long long devices = 1;
  for (const auto& a : mesh) devices *= a.size;
  std::vector<bool> in_group(n_axes, axes.empty());  // no axes: one group of every device
  for (std::size_t i = 0; i < n_axes; ++i)
    in_group[i] = in_group[i] || std::find(axes.begin(), axes.end(), mesh[i].name) != axes.end();
  // The group of device d is identified by its base: d with the group axes' coordinates zeroed.
  std::vector<int> group_of_base(static_cast<std::size_t>(devices), -1);
  std::vector<std::vector<int>> groups;
  for (long long d = 0; d < devices; ++d) {
    long long base = 0;
    for (std::size_t i = 0; i < n_axes; ++i)
      if (!in_group[i]) base += ((d / stride[i]) % mesh[i].size) * stride[i];
    int& g = group_of_base[static_cast<std::size_t>(base)];
    if (g < 0) {
      g = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    groups[g].push_back(static_cast<int>(d));  // ascending d is mesh order
  }
  return groups;
}

namespace {
void normalise(std::vector<std::vector<int>>& groups, bool ordered) {
  if (!ordered)
    for (auto& g : groups) std::sort(g.begin(), g.end());
  std::sort(groups.begin(), groups.end());
}
}  // namespace

std::optional<std::vector<std::string>> axes_matching_groups(const std::vector<MeshAxis>& mesh,
                                                             std::vector<std::vector<int>> groups,
                                                             bool ordered) {
  if (mesh.size() > 16) return std::nullopt;  // 2^16 subsets is already more than any real mesh
  normalise(groups, ordered);
  for (unsigned subset = 0; subset < (1u << mesh.size()); ++subset) {
    std::vector<std::string> axes;
    for (std::size_t i = 0; i < mesh.size(); ++i)
      if (subset & (1u << i)) axes.push_back(mesh[i].name);
    // The empty subset means "all devices" in a CollectiveSpec; it is tried last as the full set.
    if (axes.empty()) continue;
    auto candidate = mesh_axis_groups(mesh, axes);
    normalise(candidate, ordered);
    if (candidate == groups) return axes.size() == mesh.size() ? std::vector<std::string>{} : axes;
  }
  return std::nullopt;
}

std::vector<MeshAxis> parse_mesh_axes(const std::string& text, const std::string& where) {
  const std::string help = "expected axis sizes such as data=64 or data=16,model=4";
  std::vector<MeshAxis> axes;
  long long devices = 1;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError(where, "'" + item + "' is not name=size; " + help);
    MeshAxis a;
    a.name = item.substr(0, eq);
    const std::string size = item.substr(eq + 1);
    char* stop = nullptr;
    const long long v = std::strtoll(size.c_str(), &stop, 10);
    if (size.empty() || *stop != '\0' || v < 1 || v > kMaxMeshDevices)
      throw ConfigError(where, "'" + item + "': size must be an integer from 1 to " +
                                   std::to_string(kMaxMeshDevices) + "; " + help);
    for (const auto& b : axes)
      if (b.name == a.name) throw ConfigError(where, "axis '" + a.name + "' is given twice");
    a.size = static_cast<int>(v);
    devices *= v;
    if (devices > kMaxMeshDevices)
      throw ConfigError(where,
                        "the mesh has more than " + std::to_string(kMaxMeshDevices) + " devices");
    axes.push_back(a);
    start = end + 1;
  }
  return axes;
}

std::string describe_mesh(const std::vector<MeshAxis>& mesh) {
  std::string s;
  for (const auto& a : mesh) s += (s.empty() ? "" : " x ") + a.name + " " + std::to_string(a.size);
  return s;
}

std::optional<PermuteShift> permute_from_pairs(const std::vector<MeshAxis>& mesh,
                                               const std::vector<std::vector<int>>& pairs) {
  long long devices = 1;
  for (const auto& a : mesh) devices *= a.size;
  for (const auto& p : pairs)
    if (p.size() != 2 || p[0] < 0 || p[1] < 0 || p[0] >= devices || p[1] >= devices)
      return std::nullopt;
  if (pairs.empty()) return std::nullopt;
  for (unsigned subset = 1; subset < (1u << std::min<std::size_t>(mesh.size(), 16)); ++subset) {
    std::vector<std::string> axes;
    for (std::size_t i = 0; i < mesh.size(); ++i)
      if (subset & (1u << i)) axes.push_back(mesh[i].name);
    const auto groups = mesh_axis_groups(mesh, axes);
    std::vector<int> group(devices), pos(devices);
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
    PermuteShift found;
    const long long count = static_cast<long long>(pairs.size());
    const bool all_axes = axes.size() == mesh.size();
    if (open_ok && count == static_cast<long long>(groups.size()) * (size - std::abs(d0))) {
      found.shift = static_cast<int>(d0);
      found.wrap = false;
    } else if (ring_ok && count == devices) {
      found.shift = static_cast<int>(r0 > size / 2 ? r0 - size : r0);
      found.wrap = true;
    } else {
      continue;
    }
    found.axes = all_axes ? std::vector<std::string>{} : axes;
    return found;
  }
  return std::nullopt;
}

}  // namespace tpusim::trace
