#pragma once
// Replica groups versus mesh axes: which explicit groups are exactly the groups of some set of
// mesh axes (and can therefore be rescaled with the mesh), and parsing "--mesh data=64,model=4".
#include <optional>
#include <string>
#include <vector>

#include "topologies/device_mesh.hpp"

namespace tpusim::trace {

/// The groups of mesh devices that vary along `axes` (others fixed), each in mesh order
/// (row-major, last axis fastest), groups ordered by their first device. Same numbering as
/// DeviceMesh::groups, without needing a Topology.
std::vector<std::vector<int>> mesh_axis_groups(const std::vector<MeshAxis>& mesh,
                                               const std::vector<std::string>& axes);

/// The mesh axes (in mesh order) whose groups are exactly `groups`, or nullopt if none are.
/// `ordered`: member order within a group matters (collective-permute rings); otherwise each
/// group is compared as a set. Group order never matters.
std::optional<std::vector<std::string>> axes_matching_groups(const std::vector<MeshAxis>& mesh,
                                                             std::vector<std::vector<int>> groups,
                                                             bool ordered);

/// A collective-permute as a uniform shift along some mesh axes (empty: all of them).
struct PermuteShift {
  std::vector<std::string> axes;
  int shift = 0;
  bool wrap = false;
};
/// The shift that explains every (source, target) pair: each moves `shift` places within its
/// group of the axes, open (wrap=false, (G-|shift|) pairs per group) or as a ring (wrap=true, one
/// pair per device); nullopt if no set of axes does.
std::optional<PermuteShift> permute_from_pairs(const std::vector<MeshAxis>& mesh,
                                               const std::vector<std::vector<int>>& pairs);

/// Parses "data=64,model=4" into axes in the order given. Throws ConfigError naming `where` on
/// anything else (empty names, repeated names, sizes below 1 or a product above 2^24).
std::vector<MeshAxis> parse_mesh_axes(const std::string& text, const std::string& where);

/// "data 8 x model 4".
std::string describe_mesh(const std::vector<MeshAxis>& mesh);

}  // namespace tpusim::trace
