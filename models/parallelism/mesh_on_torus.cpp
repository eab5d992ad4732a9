#include "models/parallelism/mesh_on_torus.hpp"

#include <string>
#include <vector>

#include "models/parallelism/batch_norm_groups.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/rules/axis_registry.hpp"
#include "topologies/mesh_placement.hpp"

namespace tpusim {
namespace {

std::string path_of(const std::string& axis) {
  if (axis == "model") return kParallelismModel.path();
  if (axis == "model2") return kParallelismModel2.path();
  if (axis == "sequence") return kParallelismSequence.path();
  if (axis == "fsdp") return kParallelismFsdp.path();
  if (axis == "spatial") return kParallelismSpatial.path();
  if (axis == "bn") return bn_group_param().path();
  for (const auto& a : registered_axes())
    if (a.name == axis) return a.degree->path();
  return "parallelism";  // data: what the other axes leave
}

}  // namespace

void check_mesh_on_torus(const Layout& layout, const Topology& topology, int devices_per_chip,
                         ProblemList& problems) {
  std::vector<int> dims{devices_per_chip};
  for (int d = 0; d < topology.num_dims(); ++d) dims.push_back(topology.dim(d));
  const auto axes = layout.mesh_axes();
  std::vector<int> sizes;
  for (const auto& a : axes) sizes.push_back(a.size);
  const MeshPlacement p = place_mesh(dims, sizes);
  if (p.ok()) return;
  std::string torus = std::to_string(devices_per_chip) + " cores per chip";
  for (int d = 0; d < topology.num_dims(); ++d)
    torus += (d == 0 ? " x chips " : " x ") + std::to_string(topology.dim(d));
  long long rest = 1;
  for (int l : p.left) rest *= l;
  std::string allowed;
  for (long long s = 1; s <= rest; ++s)
    if (rest % s == 0 && fits_in(p.left, static_cast<int>(s)))
      allowed += (allowed.empty() ? "" : ", ") + std::to_string(s);
  const MeshAxis& axis = axes[p.failed_axis];
  problems.add(path_of(axis.name),
               "the " + axis.name + " axis of " + std::to_string(axis.size) +
                   " does not map onto the torus (" + torus +
                   ", inner axes first, as JAX's create_device_mesh places them): no part of the "
                   "dimensions left for it makes its size; allowed at its place: " +
                   allowed);
}

}  // namespace tpusim
