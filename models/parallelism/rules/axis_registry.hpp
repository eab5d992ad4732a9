#pragma once
// Registered mesh axes: an axis beyond the built-in ones (data, fsdp, bn, spatial, sequence,
// model2, model) declares itself in its rule file, beside its ShardingRule, with one
// AxisRegistrar line: its `parallelism.NAME` parameter (a Param handle), its place in the mesh
// order (outermost first), whether weights are replicated over it (a replica axis: gradients
// summed over it) and whether it splits the batch (each member runs other examples). Layout
// (models/parallelism/layout.hpp) reads every registered axis's degree and places it in
// mesh_axes(), degree(), replica_axes(), describe() and read_layout's divisibility checks.
//
//   const Param<std::int64_t> kPipeline{{"parallelism.pipeline", ParamType::Integer, "cores", 1,
//                                        "pipeline stages ...", 1, 1 << 20}};
//   const AxisRegistrar kPipelineAxis{{"pipeline", &kPipeline, kPlaceOutsideData}};
#include <cstdint>
#include <string>
#include <vector>

#include "core/param_handle.hpp"

namespace tpusim {

struct Layout;
class OpGraph;
class ProblemList;

/// Places of the built-in axes in the mesh order (smaller: outer). A registered axis takes a
/// place between them; two axes may not share a place.
inline constexpr int kPlaceOutsideData = 50;  ///< outermost, before "data"
inline constexpr int kPlaceData = 100;
inline constexpr int kPlaceFsdp = 200;
inline constexpr int kPlaceBn = 300;
inline constexpr int kPlaceSpatial = 400;
inline constexpr int kPlaceSequence = 500;
inline constexpr int kPlaceModel2 = 600;
inline constexpr int kPlaceModel = 700;

struct AxisSpec {
  std::string name;                             ///< the mesh axis, "pipeline"
  const Param<std::int64_t>* degree = nullptr;  ///< its parallelism.NAME parameter
  int place = kPlaceOutsideData;                ///< in the mesh order, outermost smallest
  /// Weights replicated over the axis: its gradients are summed over it (replica_axes()).
  bool replica = false;
  /// Each member runs other examples of the batch (a data-like axis): the examples per step
  /// grow with its degree.
  bool splits_batch = false;
  /// Reads the axis's other options into the layout (its schedule, ...), or nullptr.
  void (*read_options)(const Config& cfg, Layout& l) = nullptr;
  /// Adds the problems of splitting the model's graph over the axis (degree > 1), or nullptr.
  void (*check)(const OpGraph& g, const Layout& l, ProblemList& problems) = nullptr;
};

/// Registers an axis during static initialisation.
struct AxisRegistrar {
  explicit AxisRegistrar(AxisSpec spec);
};

/// The registered axes, by place (outermost first).
std::vector<AxisSpec> registered_axes();

}  // namespace tpusim
