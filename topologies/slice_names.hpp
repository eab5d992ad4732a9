#pragma once
// Slices as Google Cloud names them: "v4-128", "v5p-256" (TensorCores, two per chip),
// "v5litepod-16" and "v5e-16" (chips), mapped to the standard slice shapes; and the wrap rule of
// a TPU v4 / v5p slice (a dimension of 4 or more chips wraps through the optical switches).
// Plain C++.
#include <string>
#include <vector>

#include "topologies/topology.hpp"

namespace tpusim {

/// The wrap flags of a 3D TPU v4 / v5p slice of `dims` chips: a dimension of 4 or more chips wraps
/// through the optical circuit switches, a smaller one does not (ISCA 2023 TPU v4 paper, Cloud
/// docs; docs/reference.md).
std::vector<bool> optical_slice_wrap(const std::vector<int>& dims);

/// The standard shape of a slice of `chips` chips with `num_dims` dimensions: from 1 chip per
/// dimension, each doubling doubles the last of the smallest dimensions, dimensions of 1 kept last
/// (2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4, 4x4x8, ...; 1x2, 2x2, 2x4, 4x4, ... in 2D); a count of 3 x
/// 2^k takes the shape of 4/3 as many chips with its (last) largest dimension times 3/4 (8x8x12,
/// 16x16x24), or, in 3D from 64 chips on where that side is no multiple of 4, the shape of 1/3 as
/// many chips with its smallest dimension tripled (4x4x12, 4x8x12): the slices of whole 4x4x4
/// cubes. Empty if `chips` is neither.
std::vector<int> standard_slice_shape(long long chips, int num_dims);

/// True if `text` has the form of a Cloud slice name (v4-N, v5p-N, v5litepod-N, v5e-N); then
/// `out` is the slice, or a ConfigError naming `where` says why N is not one.
bool parse_slice_name(const std::string& text, TopologySpec& out, const std::string& where);

}  // namespace tpusim
