#pragma once
// Whether the mesh axes of a layout find a place on the torus as JAX's
// mesh_utils.create_device_mesh places them (topologies/mesh_placement.hpp, which DeviceMesh
// follows): whole torus dimensions per axis where the sizes allow (data 12 x fsdp 16 x tensor 8
// on an 8 x 12 x 16 v5p torus: tensor on X, fsdp on Z, data on Y), else dimensions split between
// axes. An axis none of whose sizes' parts divide what the dimensions have left is refused: a
// 7-way model axis on 8 x 8 chips.
#include "core/errors.hpp"
#include "models/parallelism/layout.hpp"
#include "topologies/topology.hpp"

namespace tpusim {

/// Adds one problem when an axis of `layout` has no place on `topology` with `devices_per_chip`
/// devices per chip, naming the parameter that sets the axis and the sizes that would fit there.
void check_mesh_on_torus(const Layout& layout, const Topology& topology, int devices_per_chip,
                         ProblemList& problems);

}  // namespace tpusim
