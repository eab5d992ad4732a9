#pragma once
// Where the logical mesh axes land on the physical grid (the cores of a chip, then the torus
// dimensions X, Y, Z), as JAX's mesh_utils.create_device_mesh assigns them (docs/llm.md, "The
// mesh"): the cores of a chip (several devices per chip: TPU v3, v4 without megacore) to the
// innermost axes first; then the logical axes from the innermost (the last, the most
// network-intensive) outwards, each given whole torus dimensions whose sizes multiply to what it
// still needs, preferring more dimensions (more links) and, among equals, the lowest-numbered. When
// no such assignment exists for every axis, physical dimensions are split (what JAX allows with
// allow_split_physical_axes; the rule here is tpusim's, not a copy of JAX's): each axis, innermost
// first, takes from every physical dimension in order the largest part that divides both what the
// axis still needs and what the dimension has left (an axis may then span several dimensions and
// share one with another axis; the first axis to take part of a dimension takes its closest chips).
#include <string>
#include <vector>

#include "topologies/device_mesh.hpp"
#include "topologies/topology.hpp"

namespace tpusim {

/// One physical dimension's share of a logical axis: `size` positions of dimension `dim`, `stride`
/// apart (the product of the shares that inner axes took of it before).
struct PlacementPiece {
  int dim = 0;
  int size = 1;
  int stride = 1;
};

struct MeshPlacement {
  /// Per logical axis (in mesh order), its pieces; the first piece varies fastest along the axis.
  std::vector<std::vector<PlacementPiece>> axes;
  bool split = false;  ///< some physical dimension is shared by two axes or partly used
  /// The axis (index into the sizes) that found no place even splitting dimensions; -1 if none.
  int failed_axis = -1;
  /// When an axis failed: what each physical dimension had left for it.
  std::vector<int> left;
  bool ok() const { return failed_axis < 0; }
};

/// Places logical axes of `sizes` (outermost first) onto physical dimensions of `dims` (innermost
/// first; dimensions of size 1 take nothing). The product of `sizes` must equal that of `dims`.
/// failed_axis names the first axis that has no place when none exists, even splitting.
MeshPlacement place_mesh(const std::vector<int>& dims, const std::vector<int>& sizes);

/// Whether an axis of `size` finds a place in what the physical dimensions have `left`, splitting.
bool fits_in(std::vector<int> left, int size);

/// "x 8, y 12" style description of an axis's pieces, naming the physical dimensions by
/// `dim_names` (the same order as `dims` of place_mesh).
std::string describe_pieces(const std::vector<PlacementPiece>& pieces,
                            const std::vector<std::string>& dim_names);

/// The physical core of each device of `mesh` (mesh order, row-major, last axis fastest) on
/// `topology` as place_mesh places its axes: the dimensions are the cores of a chip, then the
/// torus's; a core is numbered core-in-chip fastest, then chip (X fastest). Empty when the mesh
/// has no placement (device d then runs on core d).
std::vector<int> placed_cores(const DeviceMesh& mesh, const Topology& topology);

/// DeviceMesh::groups of `axes` (groups of mesh devices) with each device on its placed core;
/// `cores` from placed_cores (empty: device d on core d).
std::vector<std::vector<int>> placed_groups(const DeviceMesh& mesh, const std::vector<int>& cores,
                                            const std::vector<std::string>& axes);

}  // namespace tpusim
