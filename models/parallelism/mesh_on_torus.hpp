#pragma once
// Whether the mesh axes of a layout land on the torus as sub-grids. DeviceMesh lays the axes
// row-major onto the physical cores (the last axis on the cores of a chip, then along X, Y, Z),
// so an axis is a sub-grid exactly when, walking the axes innermost first, each takes whole
// dimensions or a dividing part of one: the 12-way model axis of PaLM fits a 12 x 16 x 32 torus
// of one-device chips, not a 16 x 16 x 24 one (12 does not divide 16).
#include "core/errors.hpp"
#include "models/parallelism/layout.hpp"
#include "topologies/topology.hpp"

namespace tpusim {

/// Adds one problem per axis of `layout` that does not map onto `topology` with
/// `devices_per_chip` devices per chip, naming the parameter that sets the axis and the sizes that
/// would map at its place.
void check_mesh_on_torus(const Layout& layout, const Topology& topology, int devices_per_chip,
                         ProblemList& problems);

}  // namespace tpusim
