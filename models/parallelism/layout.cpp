#include "models/parallelism/layout.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "core/param_handle.hpp"
#include "models/parallelism/batch_norm_groups.hpp"
#include "models/parallelism/rules/axis_registry.hpp"
#include "models/parallelism/spatial.hpp"

namespace tpusim {
namespace {
using T = ParamType;
}  // namespace

// One parameter per line reads as a table.
// clang-format off
const Param<std::int64_t> kParallelismModel{{"parallelism.model", T::Integer, "cores", 1, "model-parallel degree: cores that split every layer Megatron-style (heads, MLP columns and rows, vocabulary); the innermost mesh axis, so the cores of a chip first", 1, 1 << 20}};
const Param<std::int64_t> kParallelismModel2{{"parallelism.model2", T::Integer, "cores", 1, "2D weight-stationary sharding (GSPMD, PaLM): a second model axis, just outside 'model'; every weight matrix split on d_model over it and on d_ff or heads over 'model', activations moving (per matmul an all-gather over one axis, a reduce-scatter of the partial sums over the other); needs parallelism.shard_activations=true", 1, 1 << 20, {}, "workload.model", "decoder_lm"}};
const Param<std::int64_t> kParallelismSequence{{"parallelism.sequence", T::Integer, "cores", 1, "sequence axis, just outside 'model2': activations split along the sequence (each core a contiguous part of every sequence); attention gathers the keys and values of the whole sequence (or reshards, parallelism.sequence_attention); weights replicated over it, their gradients summed over it like 'data'", 1, 1 << 20, {}, "workload.model", "decoder_lm"}};
const Param<std::int64_t> kParallelismSpatial{{"parallelism.spatial", T::Integer, "cores", 1, "spatial-partitioning degree: cores that split each image along H (convolutional models)", 1, 1 << 20}};
const Param<std::int64_t> kParallelismSlices{{"parallelism.slices", T::Integer, "slices", 1, "multislice data parallelism: the data axis spans this many slices (it must equal topology.slices); each slice runs global_batch / slices examples and the gradient all-reduces are hierarchical (reduce-scatter over ICI, all-reduce of each shard across the slices over the data-center network, all-gather over ICI)", 1, 64}};
const Param<std::int64_t> kParallelismFsdp{{"parallelism.fsdp", T::Integer, "cores", 1, "fully sharded data parallelism: data replicas that shard the weights, gradients and optimizer state among them (an 'fsdp' mesh axis inside 'data'); weights are all-gathered before use, gradients reduce-scattered", 1, 1 << 20}};
const Param<std::int64_t> kParallelismDcnFsdp{{"parallelism.dcn_fsdp", T::Integer, "slices", 1, "fsdp across slices (MaxText's dcn_fsdp_parallelism): a divisor of parallelism.slices, the slices of a group that shard the weights among them; the data axis spans the groups (dcn_data_parallelism = slices / dcn_fsdp). Weights, gradients and optimizer state sharded over parallelism.fsdp x dcn_fsdp, each weight all-gathered over the data-center network among a group's slices then over ICI, each gradient reduce-scattered over ICI then over the data-center network among them, its shard then all-reduced over the data-center network among the dcn_data slices holding it; 1: data across all the slices", 1, 64}};
const Param<std::int64_t> kParallelismDcnPipeline{{"parallelism.dcn_pipeline", T::Integer, "slices", 1, "pipeline across slices (MaxText's dcn_pipeline_parallelism): 1, the slices are data parallel; parallelism.slices, the slices carry pipeline stages instead: parallelism.pipeline stages in all (a multiple of the slices), pipeline / slices in each slice, the collective-permutes between the slices' boundary stages over the data-center network, and data parallelism only inside each slice", 1, 64}};
const Param<bool> kParallelismWeightUpdateSharding{{"parallelism.weight_update_sharding", T::Boolean, "", false, "shard the optimizer over the data replicas (Xu et al. 2020): gradient reduce-scatter, update of 1/N of the weights, all-gather of the bf16 weights"}};
// 32 MiB: of the order of XLA's all-reduce combiner threshold; a study can sweep it.
const Param<double> kParallelismGradBucketMiB{{"parallelism.grad_bucket_MiB", T::Number, "MiB", 32.0, "gradient bytes (per core, in grad_dtype) combined into one collective; a bucket is issued as soon as the backward op completing it has run", 1.0 / 1024, 1 << 20}};
// bf16: the MLPerf v0.7 TF BERT run's use_bfloat16_all_reduce.
const Param<std::string> kParallelismGradDtype{{"parallelism.grad_dtype", T::String, "", "bf16", "dtype of the gradient collectives", -kInf, kInf, {"bf16", "f32"}}};
// clang-format on

namespace {

int read_fsdp(const Config& cfg, const Layout& l) {
  const int fsdp = static_cast<int>(kParallelismFsdp(cfg));
  ProblemList problems;
  if (l.data % fsdp != 0)
    problems.add(kParallelismFsdp.path(),
                 std::to_string(fsdp) + " does not divide the " + std::to_string(l.data) +
                     " data replicas; allowed: a divisor of " + std::to_string(l.data));
  if (fsdp > 1 && l.weight_update_sharding)
    problems.add(kParallelismWeightUpdateSharding.path(),
                 "true with parallelism.fsdp = " + std::to_string(fsdp) +
                     ": FSDP already shards the optimizer; allowed: false");
  problems.throw_if_any();
  return fsdp;
}

// The registered axes, outermost last: each must divide what the inner ones leave of the cores.
// parallelism.dcn_pipeline: 1, or the slices, which then carry the pipeline's stages; the
// pipeline axis of a slice keeps parallelism.pipeline / slices of them.
void read_dcn_pipeline(const Config& cfg, Layout& l) {
  const std::int64_t n = kParallelismDcnPipeline(cfg);
  if (n == 1) return;
  const std::string what = std::to_string(n) + " with ";
  if (n != l.slices)
    throw ConfigError(kParallelismDcnPipeline.path(),
                      what + "parallelism.slices = " + std::to_string(l.slices) +
                          "; allowed: 1 (data across the slices) or " + std::to_string(l.slices) +
                          " (pipeline stages across all of them)");
  if (kParallelismDcnFsdp(cfg) > 1)
    throw ConfigError(kParallelismDcnPipeline.path(),
                      what + "parallelism.dcn_fsdp = " + std::to_string(kParallelismDcnFsdp(cfg)) +
                          ": the slices carry either fsdp or pipeline stages; allowed: 1");
  const int p = l.registered_degree("pipeline");
  if (p % n != 0)
    throw ConfigError("parallelism.pipeline",
                      std::to_string(p) + " stages over parallelism.dcn_pipeline = " +
                          std::to_string(n) + " slices; allowed: a multiple of " +
                          std::to_string(n) + " (the stages of each slice times the slices)");
  l.registered["pipeline"] = p / static_cast<int>(n);
  l.pipeline_slices = static_cast<int>(n);
}

// parallelism.dcn_fsdp: a divisor of the slices (MaxText's hybrid mesh: dcn_data x dcn_fsdp
// slices), with fsdp inside each slice.
void read_dcn_fsdp(const Config& cfg, Layout& l) {
  const std::int64_t n = kParallelismDcnFsdp(cfg);
  if (n == 1) return;
  check_dcn_fsdp_divides(n, l.slices);
  if (l.fsdp == 1)
    throw ConfigError(kParallelismDcnFsdp.path(),
                      std::to_string(n) +
                          " with parallelism.fsdp = 1; allowed: 1, or fsdp across the slices "
                          "with parallelism.fsdp > 1 inside each");
  l.dcn_fsdp = static_cast<int>(n);
}

void check_registered(const Layout& l, int cores, long long inner, ProblemList& problems) {
  auto axes = registered_axes();
  std::string shape = "model x model2 x sequence x spatial " + std::to_string(inner);
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    const int d = l.registered_degree(it->name);
    if (d <= 1) continue;
    inner *= d;
    shape += " x " + it->name + " " + std::to_string(d);
    if (cores % inner == 0) continue;
    problems.add(it->degree->path(), std::to_string(d) + ": " + shape + " does not divide the " +
                                         std::to_string(cores) + " cores; allowed: " + it->name +
                                         " such that this product divides them");
    return;
  }
}

}  // namespace

int Layout::registered_degree(const std::string& axis) const {
  const auto it = registered.find(axis);
  return it == registered.end() ? 1 : it->second;
}

long long Layout::registered_cores() const {
  long long n = 1;
  for (const auto& a : registered_axes())
    if (!a.splits_batch) n *= registered_degree(a.name);
  return n;
}

int Layout::batch_shards() const {
  int n = data;
  for (const auto& a : registered_axes())
    if (a.splits_batch) n *= registered_degree(a.name);
  return n;
}

int Layout::replicas() const {
  int n = data * spatial * sequence;
  for (const auto& a : registered_axes())
    if (a.replica) n *= registered_degree(a.name);
  return n;
}

std::string Layout::replica_shape() const {
  std::string replica = "model " + std::to_string(model);
  if (model2 > 1) replica += " x model2 " + std::to_string(model2);
  if (sequence > 1) replica += " x sequence " + std::to_string(sequence);
  replica += " x spatial " + std::to_string(spatial);
  for (const auto& a : registered_axes())
    if (!a.splits_batch && registered_degree(a.name) > 1)
      replica += " x " + a.name + " " + std::to_string(registered_degree(a.name));
  return replica;
}

void check_dcn_fsdp_divides(std::int64_t dcn_fsdp, int slices) {
  if (dcn_fsdp >= 1 && slices % dcn_fsdp == 0) return;
  throw ConfigError(kParallelismDcnFsdp.path(),
                    std::to_string(dcn_fsdp) +
                        " with parallelism.slices = " + std::to_string(slices) +
                        "; allowed: a divisor of " + std::to_string(slices) +
                        " (the slices that carry fsdp; the data axis spans slices / dcn_fsdp)");
}

std::string Layout::describe() const {
  std::string batch_axes;
  for (const auto& a : registered_axes())
    if (a.splits_batch && registered_degree(a.name) > 1)
      batch_axes += " x " + a.name + " " + std::to_string(registered_degree(a.name));
  return std::to_string(data) + " data replicas = " + std::to_string(cores) + " cores / (" +
         replica_shape() + batch_axes + ")";
}

namespace {

struct PlacedAxis {
  int place;
  MeshAxis axis;
  bool replica;
};

// The mesh axes of `l` with their places and whether weights are replicated over them.
std::vector<PlacedAxis> placed_axes(const Layout& l) {
  std::vector<PlacedAxis> axes{{kPlaceData, {"data", l.data / (l.bn_group * l.fsdp)}, true}};
  if (l.fsdp > 1) axes.push_back({kPlaceFsdp, {"fsdp", l.fsdp}, true});
  if (l.bn_group > 1) axes.push_back({kPlaceBn, {"bn", l.bn_group}, true});
  if (l.spatial > 1) axes.push_back({kPlaceSpatial, {"spatial", l.spatial}, true});
  if (l.sequence > 1) axes.push_back({kPlaceSequence, {"sequence", l.sequence}, true});
  if (l.model2 > 1) axes.push_back({kPlaceModel2, {"model2", l.model2}, false});
  axes.push_back({kPlaceModel, {"model", l.model}, false});
  for (const auto& a : registered_axes()) {
    const int d = l.registered_degree(a.name);
    // The pipeline axis stays when its stages are across slices (parallelism.dcn_pipeline),
    // one per slice: its permutes cross the DCN.
    if (d <= 1 && !(a.name == "pipeline" && l.pipeline_slices > 1)) continue;
    auto at = std::find_if(axes.begin(), axes.end(),
                           [&](const PlacedAxis& p) { return p.place > a.place; });
    axes.insert(at, {a.place, {a.name, d}, a.replica});
  }
  return axes;
}

}  // namespace

std::vector<MeshAxis> Layout::mesh_axes() const {
  std::vector<MeshAxis> out;
  for (const auto& p : placed_axes(*this)) out.push_back(p.axis);
  return out;
}

int Layout::degree(const std::string& axis) const {
  if (axis == "data") return data / (bn_group * fsdp);
  if (axis == "fsdp") return fsdp;
  if (axis == "bn") return bn_group;
  if (axis == "model") return model;
  if (axis == "model2") return model2;
  if (axis == "sequence") return sequence;
  if (axis == "spatial") return spatial;
  return registered_degree(axis);
}

std::vector<std::string> Layout::replica_axes() const {
  std::vector<std::string> out;
  for (const auto& p : placed_axes(*this))
    if (p.replica) out.push_back(p.axis.name);
  return out;
}

Layout read_layout(const Config& cfg, int cores) {
  Layout l;
  l.cores = cores;
  l.model = static_cast<int>(kParallelismModel(cfg));
  l.slices = static_cast<int>(kParallelismSlices(cfg));
  l.spatial = static_cast<int>(kParallelismSpatial(cfg));
  l.model2 = static_cast<int>(kParallelismModel2.if_applies(cfg).value_or(1));
  l.sequence = static_cast<int>(kParallelismSequence.if_applies(cfg).value_or(1));
  l.weight_update_sharding = kParallelismWeightUpdateSharding(cfg);
  l.grad_bucket_bytes = kParallelismGradBucketMiB(cfg) * 1048576.0;
  l.grad_dtype = *parse_dtype(kParallelismGradDtype(cfg));
  for (const auto& a : registered_axes()) {
    l.registered[a.name] = static_cast<int>(a.degree->if_applies(cfg).value_or(1));
    if (a.read_options) a.read_options(cfg, l);
  }
  read_dcn_pipeline(cfg, l);

  // Every problem of the layout at once.
  ProblemList problems;
  const long long model_cores = static_cast<long long>(l.model) * l.model2 * l.sequence;
  const long long replica_cores = model_cores * l.spatial;
  if (replica_cores > cores)
    problems.add("parallelism",
                 "one replica needs " + l.replica_shape() + " = " + std::to_string(replica_cores) +
                     " cores, more than the topology's " + std::to_string(cores) + " cores");
  if (cores % l.model != 0)
    problems.add(kParallelismModel.path(),
                 std::to_string(l.model) + " does not divide the " + std::to_string(cores) +
                     " cores; allowed: a divisor of " + std::to_string(cores));
  else if (cores % (static_cast<long long>(l.model) * l.model2) != 0)
    problems.add(kParallelismModel2.path(),
                 "model " + std::to_string(l.model) + " x model2 " + std::to_string(l.model2) +
                     " does not divide the " + std::to_string(cores) +
                     " cores; allowed: model2 such that model x model2 divides them");
  else if (cores % model_cores != 0)
    problems.add(kParallelismSequence.path(),
                 "model " + std::to_string(l.model) + " x model2 " + std::to_string(l.model2) +
                     " x sequence " + std::to_string(l.sequence) + " does not divide the " +
                     std::to_string(cores) +
                     " cores; allowed: sequence such that model x model2 x sequence divides them");
  else if (cores % replica_cores != 0)
    problems.add(kParallelismSpatial.path(),
                 "model " + std::to_string(l.model) + " x spatial " + std::to_string(l.spatial) +
                     " does not divide the " + std::to_string(cores) +
                     " cores; allowed: spatial such that model x spatial divides them");
  else
    check_registered(l, cores, replica_cores, problems);
  problems.throw_if_any();
  l.data = static_cast<int>(cores / (replica_cores * l.registered_cores()));
  for (const auto& a : registered_axes())
    if (a.splits_batch) l.data /= l.registered_degree(a.name);
  l.fsdp = read_fsdp(cfg, l);
  read_dcn_fsdp(cfg, l);
  l.bn_group = read_bn_group(cfg, l);
  l.spatial_w = read_spatial_w(cfg, l);
  return l;
}

}  // namespace tpusim
