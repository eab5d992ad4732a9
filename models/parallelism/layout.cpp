#include "models/parallelism/layout.hpp"

#include "core/errors.hpp"
#include "core/params.hpp"
#include "models/parallelism/batch_norm_groups.hpp"
#include "models/parallelism/spatial.hpp"

namespace tpusim {
namespace {
using T = ParamType;

// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kLayoutParams{{
    {"parallelism.model", T::Integer, "cores", 1, "model-parallel degree: cores that split every layer Megatron-style (heads, MLP columns and rows, vocabulary); the innermost mesh axis, so the cores of a chip first", 1, 1 << 20},
    {"parallelism.spatial", T::Integer, "cores", 1, "spatial-partitioning degree: cores that split each image along H (convolutional models)", 1, 1 << 20},
    {"parallelism.slices", T::Integer, "slices", 1, "multislice data parallelism: the data axis spans this many slices (it must equal topology.slices); each slice runs global_batch / slices examples and the gradient all-reduces are hierarchical (reduce-scatter over ICI, all-reduce of each shard across the slices over the data-center network, all-gather over ICI)", 1, 64},
    {"parallelism.fsdp", T::Integer, "cores", 1, "fully sharded data parallelism: data replicas that shard the weights, gradients and optimizer state among them (an 'fsdp' mesh axis inside 'data'); weights are all-gathered before use, gradients reduce-scattered", 1, 1 << 20},
    {"parallelism.weight_update_sharding", T::Boolean, "", false, "shard the optimizer over the data replicas (Xu et al. 2020): gradient reduce-scatter, update of 1/N of the weights, all-gather of the bf16 weights"},
    // 32 MiB: of the order of XLA's all-reduce combiner threshold; a study can sweep it.
    {"parallelism.grad_bucket_MiB", T::Number, "MiB", 32.0, "gradient bytes (per core, in grad_dtype) combined into one collective; a bucket is issued as soon as the backward op completing it has run", 1.0 / 1024, 1 << 20},
    // bf16: the MLPerf v0.7 TF BERT run's use_bfloat16_all_reduce.
    {"parallelism.grad_dtype", T::String, "", "bf16", "dtype of the gradient collectives", -kInf, kInf, {"bf16", "f32"}},
}};
// clang-format on

int read_fsdp(const Config& cfg, const Layout& l) {
  const int fsdp = static_cast<int>(cfg.integer("parallelism.fsdp"));
  ProblemList problems;
  if (l.data % fsdp != 0)
    problems.add("parallelism.fsdp",
                 std::to_string(fsdp) + " does not divide the " + std::to_string(l.data) +
                     " data replicas; allowed: a divisor of " + std::to_string(l.data));
  if (fsdp > 1 && l.weight_update_sharding)
    problems.add("parallelism.weight_update_sharding",
                 "true with parallelism.fsdp = " + std::to_string(fsdp) +
                     ": FSDP already shards the optimizer; allowed: false");
  problems.throw_if_any();
  return fsdp;
}

}  // namespace

std::string Layout::describe() const {
  return std::to_string(data) + " data replicas = " + std::to_string(cores) + " cores / (model " +
         std::to_string(model) + " x spatial " + std::to_string(spatial) + ")";
}

std::vector<MeshAxis> Layout::mesh_axes() const {
  std::vector<MeshAxis> axes{{"data", data / (bn_group * fsdp)}};
  if (fsdp > 1) axes.push_back({"fsdp", fsdp});
  if (bn_group > 1) axes.push_back({"bn", bn_group});
  if (spatial > 1) axes.push_back({"spatial", spatial});
  axes.push_back({"model", model});
  return axes;
}

int Layout::degree(const std::string& axis) const {
  if (axis == "data") return data / (bn_group * fsdp);
  if (axis == "fsdp") return fsdp;
  if (axis == "bn") return bn_group;
  if (axis == "model") return model;
  if (axis == "spatial") return spatial;
  return 1;
}

std::vector<std::string> Layout::replica_axes() const {
  std::vector<std::string> axes{"data"};
  if (fsdp > 1) axes.push_back("fsdp");
  if (bn_group > 1) axes.push_back("bn");
  if (spatial > 1) axes.push_back("spatial");
  return axes;
}

Layout read_layout(const Config& cfg, int cores) {
  Layout l;
  l.cores = cores;
  l.model = static_cast<int>(cfg.integer("parallelism.model"));
  l.slices = static_cast<int>(cfg.integer("parallelism.slices"));
  l.spatial = static_cast<int>(cfg.integer("parallelism.spatial"));
  l.weight_update_sharding = cfg.boolean("parallelism.weight_update_sharding");
  l.grad_bucket_bytes = cfg.number("parallelism.grad_bucket_MiB") * 1048576.0;
  l.grad_dtype = *parse_dtype(cfg.string("parallelism.grad_dtype"));

  // Every problem of the layout at once.
  ProblemList problems;
  const long long replica_cores = static_cast<long long>(l.model) * l.spatial;
  if (replica_cores > cores)
    problems.add("parallelism",
                 "one replica needs model " + std::to_string(l.model) + " x spatial " +
                     std::to_string(l.spatial) + " = " + std::to_string(replica_cores) +
                     " cores, more than the topology's " + std::to_string(cores) + " cores");
  if (cores % l.model != 0)
    problems.add("parallelism.model", std::to_string(l.model) + " does not divide the " +
                                          std::to_string(cores) + " cores; allowed: a divisor of " +
                                          std::to_string(cores));
  else if (cores % replica_cores != 0)
    problems.add("parallelism.spatial",
                 "model " + std::to_string(l.model) + " x spatial " + std::to_string(l.spatial) +
                     " does not divide the " + std::to_string(cores) +
                     " cores; allowed: spatial such that model x spatial divides them");
  problems.throw_if_any();
  l.data = static_cast<int>(cores / replica_cores);
  l.fsdp = read_fsdp(cfg, l);
  l.bn_group = read_bn_group(cfg, l);
  l.spatial_w = read_spatial_w(cfg, l);
  return l;
}

}  // namespace tpusim
