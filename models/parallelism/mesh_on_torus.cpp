#include "models/parallelism/mesh_on_torus.hpp"

#include <string>
#include <vector>

#include "models/parallelism/rules/axis_registry.hpp"
#include "models/parallelism/batch_norm_groups.hpp"
#include "models/parallelism/layout.hpp"

namespace tpusim {
namespace {

// The physical dimensions innermost first (cores of a chip, then X, Y, ...), with how much of
// the current one the axes placed so far use.
struct Cursor {
  std::vector<int> dims;
  std::size_t dim = 0;
  long long used = 1;
};

// Places an axis of `size` at the cursor; false if it is not a sub-grid there.
bool place(Cursor& c, long long size) {
  while (size > 1) {
    if (c.dim >= c.dims.size()) return false;
    const long long left = c.dims[c.dim] / c.used;
    if (size < left) {
      if (left % size != 0) return false;
      c.used *= size;
      return true;
    }
    if (size % left != 0) return false;
    size /= left;
    ++c.dim;
    c.used = 1;
  }
  if (c.dim < c.dims.size() && c.used == c.dims[c.dim]) {
    ++c.dim;
    c.used = 1;
  }
  return true;
}

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
  Cursor c;
  c.dims.push_back(devices_per_chip);
  for (int d = 0; d < topology.num_dims(); ++d) c.dims.push_back(topology.dim(d));
  std::string torus = std::to_string(devices_per_chip) + " cores per chip";
  for (int d = 0; d < topology.num_dims(); ++d)
    torus += (d == 0 ? " x chips " : " x ") + std::to_string(topology.dim(d));
  const auto axes = layout.mesh_axes();
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    if (it->size <= 1) continue;
    const Cursor before = c;
    if (place(c, it->size)) continue;
    std::string allowed;
    long long rest = 1;
    for (std::size_t d = before.dim; d < before.dims.size(); ++d) rest *= before.dims[d];
    rest /= before.used;
    for (long long s = 1; s <= rest; ++s) {
      Cursor t = before;
      if (rest % s == 0 && place(t, s))
        allowed += (allowed.empty() ? "" : ", ") + std::to_string(s);
    }
    problems.add(path_of(it->name),
                 "the " + it->name + " axis of " + std::to_string(it->size) +
                     " does not map onto the torus (" + torus +
                     ", inner axes first): its cores would not form a sub-grid; allowed at its "
                     "place: " +
                     allowed);
    return;  // the axes outside it have no defined place
  }
}

}  // namespace tpusim
