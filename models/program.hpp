#pragma once
// The SPMD Program: one ordered op list that every core runs with its own coordinates.
// Produced by the partitioner (models/parallelism) or read from a trace (traces/); played by the
// executor (sim/). Memory is O(ops + mesh), never O(ops x cores).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "topologies/device_mesh.hpp"

namespace tpusim {

/// I8 and F8: the 8-bit operands of quantized matmuls (workload.quantization) and int8 weights.
enum class DType { BF16, F32, I32, I8, F8 };
const char* to_string(DType d);  ///< "bf16", "f32", "i32", "int8", "fp8"
int dtype_bytes(DType d);
/// True for the 8-bit dtypes, whose matmuls run at hardware.mxu.int8_rate or fp8_rate.
inline bool is_8bit(DType d) { return d == DType::I8 || d == DType::F8; }
/// Parses "bf16", "f32", "i32", "int8", "fp8"; nullopt otherwise.
std::optional<DType> parse_dtype(const std::string& s);

enum class Phase { Forward, Backward, Optimizer, Other };
const char* to_string(Phase p);
std::optional<Phase> parse_phase(const std::string& s);

/// A matmul as the MXU sees it, per core after partitioning: `batch` independent
/// [m,k] x [k,n] products (convolutions are lowered to this by their builders).
struct MatmulShape {
  std::int64_t batch = 1;
  std::int64_t m = 0;
  std::int64_t k = 0;
  std::int64_t n = 0;
  double flops() const { return 2.0 * batch * m * k * n; }
};

/// What a compute op costs, per core. The TensorCore model turns it into time.
struct ComputeCost {
  std::optional<MatmulShape> matmul;  ///< MXU work, if any
  double vpu_elements = 0;            ///< elements the vector unit touches
  double vpu_ops_per_element = 1;     ///< vector ops per element (e.g. ~10 for GELU)
  double bytes_read = 0;              ///< HBM bytes read
  double bytes_written = 0;           ///< HBM bytes written
  double flops = 0;                   ///< useful FLOPs (multiply-add = 2), for utilisation
  std::optional<double> measured_ns;  ///< a measured duration (traces), used if chosen
  /// dtype of the MXU's operands: int8 and fp8 stream rows at hardware.mxu.int8_rate and
  /// fp8_rate times bf16's (sim/core/tensor_core_cost.cpp); bf16 and f32 at the bf16 rate.
  DType mxu_dtype = DType::BF16;
};

enum class CollectiveKind { AllReduce, ReduceScatter, AllGather, AllToAll, CollectivePermute };
const char* to_string(CollectiveKind k);  ///< "all-reduce", ...
std::optional<CollectiveKind> parse_collective_kind(const std::string& s);

/// A collective, per core. `bytes` is the full buffer of one core: the input of an all-reduce
/// or reduce-scatter, the output of an all-gather, the whole send buffer of an all-to-all, and
/// what each core sends in a collective-permute.
struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::AllReduce;
  double bytes = 0;
  DType dtype = DType::BF16;
  /// The group: cores that vary along these mesh axes (the usual, rescalable form)...
  std::vector<std::string> axes;
  /// ...or explicit groups of mesh devices (every device in exactly one group).
  std::vector<std::vector<int>> replica_groups;
  /// Collective-permute only: each core sends to the member `shift` places along its group
  /// (e.g. +1 and -1 ops for a halo exchange); at the ends of an open group nothing is sent.
  int shift = 0;
  bool wrap = false;  ///< permute: the group is a ring (the last sends to the first)
};

/// What a per-core buffer holds, for the memory model (models/memory/memory_model.hpp;
/// docs/memory.md has the table of classes with their dtypes and sources).
enum class MemoryClass {
  MasterWeights,        ///< f32 master weights (resident; sharded with weight-update sharding)
  WeightCopies,         ///< bf16 copies the forward and backward passes read (resident)
  OptimizerState,       ///< f32 optimizer slots (resident; sharded like the master weights)
  Infeed,               ///< the double-buffered input batch (resident)
  Activations,          ///< forward outputs, live until their last reader (often a backward op)
  ActivationGradients,  ///< backward outputs flowing towards the inputs
  WeightGradients,      ///< f32 weight gradients, live until their bucket's collective
  GradientBuckets,      ///< reduced gradients in the reduction dtype, live until the optimizer
  OptimizerUpdates,     ///< LAMB's f32 update direction and norms between its two phases
  CollectiveBuffers,    ///< partial sums staged for their all-reduce; norms in flight
  Halos,                ///< rows or columns received from spatial neighbours
  KvCache,              ///< a serving step's key/value cache (resident)
};
constexpr int kMemoryClasses = 12;
const char* to_string(MemoryClass c);  ///< "master_weights", ...

/// The tensor an op produces on each core, with its lifetime along the program order.
struct OpOutput {
  double bytes = 0;  ///< per core, padded shards included; 0: the op writes in place
  DType dtype = DType::BF16;
  MemoryClass cls = MemoryClass::Activations;
  int last_use = -1;  ///< index of the last op reading it; -1: freed right after this op
};

/// A buffer that lives through the whole step on every core.
struct ResidentBuffer {
  std::string name;  ///< e.g. "encoder.3.mlp.in master weights"
  MemoryClass cls = MemoryClass::MasterWeights;
  DType dtype = DType::F32;
  double bytes = 0;  ///< per core
};

/// One operand an op reads from an earlier op's output (the compiler's fusion and placement
/// passes follow these to know which bytes cross HBM).
struct DataRead {
  int producer = -1;  ///< index of the op whose output is read
  double bytes = 0;   ///< per core, HBM bytes of that output this op reads
};

/// How the compiler (compiler/) may fuse an op: an MXU op (matmul, convolution) can take
/// element-wise consumers into its output; vector ops fuse into loops; reductions fuse as extra
/// outputs of the loop or MXU op producing their input; opaque ops (collectives, gathers, loss,
/// optimizer, sorting, loops over data) never fuse.
enum class FusionRole { Opaque, Mxu, Vector, Reduction };

struct Op {
  std::string name;  ///< e.g. "encoder.3.mlp.in.bwd_weight"
  std::string kind;  ///< "matmul", "layer_norm", "softmax", "all-reduce", ...
  Phase phase = Phase::Other;
  bool is_collective = false;
  ComputeCost compute;        ///< if !is_collective
  CollectiveSpec collective;  ///< if is_collective
  DType dtype = DType::BF16;
  std::vector<std::vector<std::int64_t>> shapes;  ///< tensor shapes, for reports and traces
  std::vector<int> deps;                          ///< indices of earlier ops this one waits for
  OpOutput output;                                ///< for the memory model
  // Filled by the partitioner for the compiler (compiler/); empty in traces.
  std::vector<DataRead> reads;  ///< operands read from earlier ops' outputs
  /// Per-core logical shape of the output (major to minor; {N, H, W, C} for a feature map,
  /// {M, N} for a matmul), empty when unknown; the compiler pads it to the TPU tiles.
  std::vector<std::int64_t> out_shape;
  bool feature_map = false;  ///< out_shape is {N, H, W, C}: XLA's convolution layout (C minor)
  FusionRole fusion_role = FusionRole::Opaque;
  /// Outputs beyond `output` a fused op keeps in HBM (its members' tensors read outside it).
  std::vector<OpOutput> more_outputs;
  /// A fused op: the names of its member ops in program order (empty: not a fusion).
  std::vector<std::string> fused;
  double padding_bytes = 0;  ///< HBM bytes the tiled layout adds to this op's traffic
  double cmem_bytes = 0;     ///< bytes of this op's traffic served by CMEM instead of HBM
};

/// Pipeline parallelism (models/parallelism/pipeline_schedule.hpp): the Program is stage 0's
/// view of the SPMD stage program, a sequence of units, each one chunk of layers run forward or
/// backward on one microbatch (or, in the bubble, on none), followed by its collective-permute.
struct PipelineUnit {
  int first_op = 0;     ///< the unit's ops are [first_op, last_op]
  int last_op = 0;      ///< its collective-permute
  bool forward = true;  ///< forward or backward
  int iteration = 0;    ///< forward (backward) units in lockstep order, 0..m x repeats + p - 2
};
struct PipelineInfo {
  int stages = 1;  ///< 1: no pipeline
  int microbatches = 1;
  int repeats = 1;  ///< model chunks per stage (circular / interleaved)
  std::string schedule;
  std::vector<PipelineUnit> units;
  /// True when iteration `it` of a forward (backward) unit is a bubble on `stage`: it has no
  /// microbatch there (in lockstep, stage s runs forward iterations s .. s + m x repeats - 1 and
  /// backward iterations p - 1 - s .. p - 2 - s + m x repeats).
  bool bubble(bool forward, int it, int stage) const;
};

struct Program {
  std::string model;                   ///< e.g. "bert_large"
  std::vector<MeshAxis> mesh;          ///< the mesh the Program was partitioned for
  std::int64_t examples_per_step = 0;  ///< global batch
  /// Bytes of one example as the infeed delivers it (the builder's OpGraph says); 0: unknown.
  double infeed_bytes_per_example = 0;
  std::vector<Op> ops;
  /// Buffers that live through the step (weights, optimizer slots, infeed), per core.
  std::vector<ResidentBuffer> resident;
  /// True when the ops' outputs and the resident buffers describe the step's memory (the
  /// partitioner sets them); false for a Program read from a trace, which carries no sizes.
  bool has_memory = false;
  /// The step's FLOPs as the model defines them, over all cores: every replica's forward and
  /// backward once, without recomputation or work repeated on the cores of a model split (the
  /// numerator of model FLOPs utilisation). 0: unknown (a Program read from a trace).
  double model_flops = 0;
  /// Tokens in one example of a sequence model (the decoder's seq_len); 0: not counted.
  std::int64_t tokens_per_example = 0;
  PipelineInfo pipeline;  ///< stages > 1: the pipeline's units

  /// Checks dependencies point backwards, outputs are freed at or after their producer and
  /// collectives name mesh axes that exist.
  /// Throws ConfigError naming the op.
  void validate() const;
  std::size_t num_collectives() const;
};

}  // namespace tpusim
