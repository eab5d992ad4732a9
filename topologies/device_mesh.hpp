#pragma once
// Logical mesh axes (for example data x model) laid onto the physical cores of a topology.
//
// Physical cores are numbered core-in-chip fastest, then chip (X fastest, then Y, ...). Mesh
// devices are numbered row-major with the last axis fastest, and device d runs on physical core
// d. So the innermost (last) axis lands on the closest cores: the cores of one chip first, then
// neighbouring chips along X, and so on; an axis group is a sub-grid of the physical grid.
#include <string>
#include <vector>

#include "topologies/topology.hpp"

namespace tpusim {

struct MeshAxis {
  std::string name;
  int size = 1;
};

class DeviceMesh {
 public:
  /// Throws ConfigError if the axes' product differs from the number of cores.
  DeviceMesh(const Topology& topology, int devices_per_chip, std::vector<MeshAxis> axes);

  const std::vector<MeshAxis>& axes() const { return axes_; }
  int num_devices() const { return num_devices_; }
  int devices_per_chip() const { return devices_per_chip_; }
  int axis_index(const std::string& name) const;  ///< -1 if absent
  int axis_size(const std::string& name) const;   ///< 1 if absent
  int physical_core(int device) const { return device; }
  int chip_of_core(int core) const { return core / devices_per_chip_; }
  int core_in_chip(int core) const { return core % devices_per_chip_; }
  std::vector<int> device_coords(int device) const;

  /// The groups of physical cores that vary along `axes` (others fixed); each group is listed in
  /// mesh order. An empty list means every device in one group.
  std::vector<std::vector<int>> groups(const std::vector<std::string>& axes) const;
  /// The group containing `device` along `axes`.
  std::vector<int> group_of(int device, const std::vector<std::string>& axes) const;

 private:
  std::vector<MeshAxis> axes_;
  std::vector<int> stride_;
  int num_devices_ = 1;
  int devices_per_chip_ = 1;
};

}  // namespace tpusim
