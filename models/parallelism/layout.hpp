#pragma once
// The parallelism layout of a study: how the cores divide into data-parallel replicas, and how
// each replica's cores split its ops (model and spatial axes), plus the gradient-sync options.
#include <map>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/param_handle.hpp"
#include "models/program.hpp"
#include "topologies/device_mesh.hpp"

namespace tpusim {

struct Layout {
  int cores = 1;
  /// Replicas of the whole model: cores / (model x model2 x sequence x spatial), in one slice.
  int data = 1;
  /// Slices the data axis spans (multislice; parallelism.slices): data x slices replicas in all.
  int slices = 1;
  /// Of the slices, how many carry fsdp (parallelism.dcn_fsdp, MaxText's
  /// dcn_fsdp_parallelism; a divisor of the slices): weights, gradients and optimizer state are
  /// sharded over fsdp x dcn_fsdp; weights are all-gathered and gradients reduce-scattered over
  /// the DCN too, among the dcn_fsdp slices of a group. The rest, slices / dcn_fsdp
  /// (dcn_data_slices), carry data: the gradient shards are all-reduced among them.
  int dcn_fsdp = 1;
  /// The fsdp shards in all: fsdp, times the slices that carry fsdp.
  int fsdp_shards() const { return fsdp * dcn_fsdp; }
  /// Slices the pipeline spans (parallelism.dcn_pipeline, MaxText's dcn_pipeline_parallelism):
  /// 1, or the slices, which then carry pipeline stages instead of data: the pipeline axis of
  /// each slice holds parallelism.pipeline / slices of the stages (its registered degree).
  int pipeline_slices = 1;
  /// The pipeline stages in all: the pipeline axis's degree in a slice, times pipeline_slices.
  int pipeline_stages() const { return registered_degree("pipeline") * pipeline_slices; }
  /// Slices that split the batch: the slices, or 1 when they carry the pipeline.
  int batch_slices() const { return pipeline_slices > 1 ? 1 : slices; }
  /// Slices the data axis spans (MaxText's dcn_data_parallelism): those that split the batch
  /// over their data replicas, batch_slices / dcn_fsdp.
  int dcn_data_slices() const { return batch_slices() / dcn_fsdp; }
  int model = 1;  ///< Megatron-style split of each layer, innermost mesh axis
  /// The second model axis of 2D weight-stationary sharding (decoder_lm: weights split on
  /// d_model over it, on d_ff and heads over "model"); outside "model".
  int model2 = 1;
  /// The sequence axis (decoder_lm): activations split along the sequence; weights replicated
  /// over it and their gradients summed over it, as over "data". Outside "model2".
  int sequence = 1;
  int spatial = 1;  ///< split of activations along H (convolutional models)
  /// Data replicas whose batch-norm statistics are combined (cross-replica BN, convolutional
  /// models; models/parallelism/batch_norm_groups.hpp). > 1 splits the data axis into
  /// "data" (data / bn_group) x "bn" (bn_group), so the BN all-reduce spans {"bn", "spatial"}.
  int bn_group = 1;
  /// Fully sharded data parallelism: of the data replicas, how many shard the weights, the
  /// gradients and the optimizer state among them (an "fsdp" axis of that size inside "data").
  /// Each weight is all-gathered before its forward and backward use and its gradient
  /// reduce-scattered (docs/llm.md).
  int fsdp = 1;
  /// Of the spatial cores, how many split W (models/parallelism/spatial.hpp); 1: H only.
  int spatial_w = 1;
  bool weight_update_sharding = false;
  double grad_bucket_bytes = 0;  ///< per core, in the gradient dtype
  DType grad_dtype = DType::BF16;
  /// The degrees of the registered axes (models/parallelism/rules/axis_registry.hpp), by name:
  /// every registered axis, 1 where the study does not split over it.
  std::map<std::string, int> registered;
  /// The pipeline axis's options (models/parallelism/rules/pipeline_axis.cpp): model chunks per
  /// stage (parallelism.pipeline_repeats) and the schedule (parallelism.pipeline_schedule).
  int pipeline_repeats = 1;
  std::string pipeline_schedule = "gpipe";

  /// A registered axis's degree (1 if it is not registered).
  int registered_degree(const std::string& axis) const;
  /// Cores of one replica along the registered axes that do not split the batch.
  long long registered_cores() const;

  /// {"data", "model"}, or {"data", "spatial", "model"} when spatial > 1; innermost last.
  /// With fsdp > 1 an "fsdp" axis follows "data"; with bn_group > 1 a "bn" axis of bn_group
  /// replicas follows (data / (fsdp x bn_group) remain on "data"). "sequence" and "model2",
  /// when > 1, come in that order just outside "model". A registered axis, when > 1, takes its
  /// registered place among them.
  std::vector<MeshAxis> mesh_axes() const;
  /// The degree of a named axis (1 for an axis the mesh does not have).
  int degree(const std::string& axis) const;
  /// Axes along which weights are replicated and gradients must be summed: data, and spatial
  /// and sequence when present, and the registered replica axes (in mesh order). Weight-update
  /// sharding shards the optimizer over these.
  std::vector<std::string> replica_axes() const;
  int replicas() const;
  /// Ways the batch is split: data, times the registered axes that split the batch.
  int batch_shards() const;
  /// "model 2 x spatial 1" (model2, sequence and registered axes named when > 1)
  std::string replica_shape() const;
  /// "4096 data replicas = 8192 cores / (model 2 x spatial 1)"
  std::string describe() const;
};

/// The layout's parameters (declared in layout.cpp), for the readers and messages elsewhere.
extern const Param<std::int64_t> kParallelismModel, kParallelismModel2, kParallelismSequence,
    kParallelismSpatial, kParallelismSlices, kParallelismFsdp, kParallelismDcnFsdp,
    kParallelismDcnPipeline;
extern const Param<bool> kParallelismWeightUpdateSharding;

/// Reads parallelism.* for `cores` cores. Throws ConfigError naming the JSON path when a degree
/// does not divide the cores or the replica needs more cores than there are.
Layout read_layout(const Config& cfg, int cores);

/// Throws the ConfigError of parallelism.dcn_fsdp unless it divides the `slices` (read_layout's
/// check, and the collective planner's for `tpusim collective`, which reads no layout).
void check_dcn_fsdp_divides(std::int64_t dcn_fsdp, int slices);

}  // namespace tpusim
