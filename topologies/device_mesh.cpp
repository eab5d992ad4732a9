#include "topologies/device_mesh.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace tpusim {

DeviceMesh::DeviceMesh(const Topology& topology, int devices_per_chip, std::vector<MeshAxis> axes)
    : axes_(std::move(axes)), devices_per_chip_(devices_per_chip) {
  if (axes_.empty()) throw ConfigError("parallelism", "the device mesh needs at least one axis");
  long long n = 1;
  for (const auto& a : axes_) {
    if (a.size < 1) throw ConfigError("parallelism." + a.name, "axis size must be at least 1");
    n *= a.size;
  }
  const long long cores = static_cast<long long>(topology.num_chips()) * devices_per_chip;
  if (n != cores) {
    std::string shape;
    for (const auto& a : axes_)
      shape += (shape.empty() ? "" : " x ") + a.name + " " + std::to_string(a.size);
    throw ConfigError("parallelism", "the device mesh (" + shape + " = " + std::to_string(n) +
                                         " cores) must cover the topology's " +
                                         std::to_string(cores) + " cores (" + topology.describe() +
                                         ", " + std::to_string(devices_per_chip) +
                                         " cores per chip)");
  }
  num_devices_ = static_cast<int>(n);
  stride_.assign(axes_.size(), 1);
  for (int i = static_cast<int>(axes_.size()) - 2; i >= 0; --i)
    stride_[i] = stride_[i + 1] * axes_[i + 1].size;
}

int DeviceMesh::axis_index(const std::string& name) const {
  for (std::size_t i = 0; i < axes_.size(); ++i)
    if (axes_[i].name == name) return static_cast<int>(i);
  return -1;
}

int DeviceMesh::axis_size(const std::string& name) const {
  int i = axis_index(name);
  return i < 0 ? 1 : axes_[i].size;
}

std::vector<int> DeviceMesh::device_coords(int device) const {
  std::vector<int> c(axes_.size());
  for (std::size_t i = 0; i < axes_.size(); ++i) c[i] = (device / stride_[i]) % axes_[i].size;
  return c;
}

std::vector<int> DeviceMesh::group_of(int device, const std::vector<std::string>& names) const {
  std::vector<bool> in_group(axes_.size(), names.empty());
  for (const auto& n : names) {
    int i = axis_index(n);
    if (i < 0) throw ConfigError("mesh axis", "unknown mesh axis '" + n + "'");
    in_group[i] = true;
  }
  // Base device: the group's coordinates zeroed.
  auto c = device_coords(device);
  int base = 0;
  for (std::size_t i = 0; i < axes_.size(); ++i)
    if (!in_group[i]) base += c[i] * stride_[i];
  std::vector<int> members{base};
  for (std::size_t i = 0; i < axes_.size(); ++i) {  // outer axes first keeps mesh order
    if (!in_group[i]) continue;
    std::vector<int> next;
    next.reserve(members.size() * axes_[i].size);
    for (int m : members)
      for (int k = 0; k < axes_[i].size; ++k) next.push_back(m + k * stride_[i]);
    members.swap(next);
  }
  std::sort(members.begin(), members.end());
  for (auto& m : members) m = physical_core(m);
  return members;
}

std::vector<std::vector<int>> DeviceMesh::groups(const std::vector<std::string>& names) const {
  std::vector<std::vector<int>> out;
  std::vector<bool> seen(num_devices_, false);
  for (int d = 0; d < num_devices_; ++d) {
    if (seen[d]) continue;
    auto g = group_of(d, names);
    for (int m : g) seen[m] = true;
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace tpusim
