#pragma once
// The entry point of models/ for the rest of tpusim: a validated study in, the SPMD Program out.
//
//   Topology topo(topology_from_json(cfg.json().at("topology")));
//   HardwareSpec hw = HardwareSpec::from_config(cfg);
//   Program program = build_program(cfg, topo, hw);
//   DeviceMesh mesh(topo, hw.cores_per_chip, program.mesh);   // == workload_mesh_axes(...)
//
// Parameters read here (declared in models/parallelism/layout.cpp and by the builders):
// workload.model, workload.global_batch, the model's dimensions, parallelism.model,
// parallelism.spatial, parallelism.weight_update_sharding, parallelism.grad_bucket_MiB,
// parallelism.grad_dtype.
#include <vector>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "models/program.hpp"
#include "topologies/device_mesh.hpp"
#include "topologies/topology.hpp"

namespace tpusim {

/// The mesh axes of a study on `topology`: {"data", "model"} with sizes data x model = cores,
/// and {"data", "spatial", "model"} when parallelism.spatial > 1. The innermost (last) axis lands
/// on the closest cores (DeviceMesh). Throws ConfigError naming the JSON path when the layout
/// does not fit the cores (a degree that does not divide them, a mesh larger than the topology).
std::vector<MeshAxis> workload_mesh_axes(const Config& cfg, const Topology& topology,
                                         const HardwareSpec& hw);

/// Builds the model named by workload.model for one replica's share of the global batch,
/// derives backward and optimizer, and partitions it into the Program every core runs
/// (per-core costs, collectives over the mesh axes of workload_mesh_axes). The Program is
/// validated. Throws ConfigError naming the JSON path for every inconsistent layout (batch not
/// divisible by the data replicas, a model degree not dividing the heads, an unknown model...).
Program build_program(const Config& cfg, const Topology& topology, const HardwareSpec& hw);

}  // namespace tpusim
