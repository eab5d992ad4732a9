#include "models/program.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "core/limits.hpp"

namespace tpusim {

const char* to_string(DType d) {
  switch (d) {
    case DType::BF16:
      return "bf16";
    case DType::F32:
      return "f32";
    case DType::I32:
      return "i32";
    case DType::I8:
      return "int8";
    case DType::F8:
      return "fp8";
  }
  return "?";
}
int dtype_bytes(DType d) {
  if (d == DType::BF16) return 2;
  return is_8bit(d) ? 1 : 4;
}
std::optional<DType> parse_dtype(const std::string& s) {
  for (DType d : {DType::BF16, DType::F32, DType::I32, DType::I8, DType::F8})
    if (s == to_string(d)) return d;
  return std::nullopt;
}

const char* to_string(Phase p) {
  switch (p) {
    case Phase::Forward:
      return "forward";
    case Phase::Backward:
      return "backward";
    case Phase::Optimizer:
      return "optimizer";
    case Phase::Other:
      return "other";
  }
  return "?";
}
std::optional<Phase> parse_phase(const std::string& s) {
  for (Phase p : {Phase::Forward, Phase::Backward, Phase::Optimizer, Phase::Other})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

const char* to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return "all-reduce";
    case CollectiveKind::ReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::AllGather:
      return "all-gather";
    case CollectiveKind::AllToAll:
      return "all-to-all";
    case CollectiveKind::CollectivePermute:
      return "collective-permute";
  }
  return "?";
}
std::optional<CollectiveKind> parse_collective_kind(const std::string& s) {
  for (auto k :
       {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter, CollectiveKind::AllGather,
        CollectiveKind::AllToAll, CollectiveKind::CollectivePermute})
    if (s == to_string(k)) return k;
  return std::nullopt;
}

const char* to_string(MemoryClass c) {
  switch (c) {
    case MemoryClass::MasterWeights:
      return "master_weights";
    case MemoryClass::WeightCopies:
      return "weight_copies";
    case MemoryClass::OptimizerState:
      return "optimizer_state";
    case MemoryClass::Infeed:
      return "infeed";
    case MemoryClass::Activations:
      return "activations";
    case MemoryClass::ActivationGradients:
      return "activation_gradients";
    case MemoryClass::WeightGradients:
      return "weight_gradients";
    case MemoryClass::GradientBuckets:
      return "gradient_buckets";
    case MemoryClass::OptimizerUpdates:
      return "optimizer_updates";
    case MemoryClass::CollectiveBuffers:
      return "collective_buffers";
    case MemoryClass::Halos:
      return "halos";
    case MemoryClass::KvCache:
      return "kv_cache";
  }
  return "?";
}

void Program::validate() const {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    // Only an error names the op: building the text for every op cost more than the checks.
    const auto where = [&] { return "ops[" + std::to_string(i) + "] (" + op.name + ")"; };
    for (int d : op.deps)
      if (d < 0 || static_cast<std::size_t>(d) >= i)
        throw ConfigError(where(),
                          "depends on op " + std::to_string(d) +
                              ", which is not an earlier op (dependencies must point backwards)");
    if (op.output.last_use != -1 && (op.output.last_use < static_cast<int>(i) ||
                                     static_cast<std::size_t>(op.output.last_use) >= ops.size()))
      throw ConfigError(where(), "output last used by op " + std::to_string(op.output.last_use) +
                                     ", which is not this op or a later one");
    if (!op.is_collective) {
      const ComputeCost& c = op.compute;
      if (!(c.flops <= kMaxOpFlops))
        throw ConfigError(where(), "flops " + past_limit(kMaxOpFlops, "FLOPs", "kMaxOpFlops"));
      if (!(c.bytes_read <= kMaxBytes) || !(c.bytes_written <= kMaxBytes))
        throw ConfigError(where(),
                          "bytes read or written " + past_limit(kMaxBytes, "bytes", "kMaxBytes"));
      if (c.measured_ns && !(*c.measured_ns <= kMaxSimulatedSeconds * 1e9))
        throw ConfigError(where(), "measured_ns " + past_limit(kMaxSimulatedSeconds * 1e9, "ns",
                                                               "kMaxSimulatedSeconds"));
      continue;
    }
    if (!(op.collective.bytes <= kMaxBytes))
      throw ConfigError(where(), "collective bytes " + past_limit(kMaxBytes, "bytes", "kMaxBytes"));
    for (const auto& a : op.collective.axes)
      if (std::none_of(mesh.begin(), mesh.end(), [&](const MeshAxis& m) { return m.name == a; }))
        throw ConfigError(where(), "names mesh axis '" + a + "', which the mesh does not have");
    if (!(op.collective.bytes >= 0)) throw ConfigError(where(), "negative collective size");
  }
}

std::size_t Program::num_collectives() const {
  return static_cast<std::size_t>(
      std::count_if(ops.begin(), ops.end(), [](const Op& o) { return o.is_collective; }));
}

}  // namespace tpusim

namespace tpusim {

bool PipelineInfo::bubble(bool forward, int it, int stage) const {
  const int first = forward ? stage : stages - 1 - stage;
  return it < first || it >= first + microbatches * repeats;
}

}  // namespace tpusim
