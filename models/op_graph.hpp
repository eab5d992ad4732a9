#pragma once
// The op graph of one model replica's training step: forward, backward and optimizer ops as the
// nodes of a Boost.Graph, tensor dependencies as its edges. Builders (models/builders) create the
// forward ops; derive_training_graph (models/training.hpp) adds the backward op by op and the
// optimizer; the partitioner (models/parallelism) turns the graph into the SPMD Program.
//
// Costs in an OpNode are for ONE model replica processing its share of the global batch (the
// replica batch), before any model or spatial split. Mixed precision as on TPU: matmul inputs
// bf16, f32 accumulation, f32 master weights and optimizer state, bf16 activations.
#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/program.hpp"

namespace tpusim {

enum class OpKind {
  Matmul,       ///< matmul or einsum, on the MXU
  Conv,         ///< convolution (lowered to a MatmulShape by its builder)
  Elementwise,  ///< vector-unit op (activation, residual add, dropout, gather, ...)
  Softmax,
  LayerNorm,
  BatchNorm,
  Pool,
  Embedding,  ///< table lookup (gather)
  Loss,
  Optimizer,     ///< optimizer update of one parameter group
  TopK,          ///< top-k or sort: a bitonic network on the vector unit
  OneHotMatmul,  ///< a gather or selection written as a one-hot matmul or einsum (MXU)
  Gather,        ///< a true gather or scatter-add: one HBM access per element
};
const char* to_string(OpKind k);  ///< "matmul", "elementwise", ...

/// Which dimension of an op a mesh axis splits. For a matmul these name MatmulShape dimensions;
/// for vector ops any value other than None means "the elements are divided over the axis".
/// Splitting a reduced dimension (K of a matmul, the vocabulary of an embedding lookup or of a
/// loss, the weight elements of a LAMB norm) leaves each core with a partial result: the
/// partitioner follows such an op with an all-reduce over the axis (see OpNode::partial_bytes).
enum class SplitDim { None, Batch, M, K, N };
const char* to_string(SplitDim d);

/// How the mesh axes inside one replica split an op. Data parallelism replicates whole graphs
/// and needs no annotation.
struct OpSplit {
  SplitDim model = SplitDim::None;    ///< Megatron-style model parallelism ("model" axis)
  SplitDim spatial = SplitDim::None;  ///< spatial partitioning of activations ("spatial" axis)
  /// The second model axis of 2D weight-stationary sharding ("model2", decoder_lm: d_model)
  SplitDim model2 = SplitDim::None;
  SplitDim sequence = SplitDim::None;  ///< the sequence axis ("sequence", decoder_lm: tokens)
};

/// The splits of the axes that shard a language model's tensors ("model", "model2",
/// "sequence"), in that order, each with its axis name.
std::vector<std::pair<std::string, SplitDim>> tensor_splits(const OpSplit& s);

/// An operand an op needs whole (over `axes`) that arrives sharded: an all-gather comes first
/// (decoder_lm's sharded activations and sequence axis, docs/llm.md).
struct OperandGather {
  int slot = 0;                   ///< the input made whole (0: a matmul's A, 1: its B)
  double bytes = 0;               ///< per replica, of the whole operand (bf16), before any split
  std::vector<std::string> axes;  ///< gathered over these mesh axes
  std::vector<std::string> divisors;  ///< the other axes splitting it: bytes per core = bytes /
                                      ///< their degrees
  std::vector<int> from;  ///< the vertices whose outputs make it up (empty: input `slot`)
  std::string name;       ///< tells apart gathers of the same sources and size ("k", "v")
  /// Shared by the forward op and the backward ops reading the same sources (K and V over the
  /// sequence axis, kept from the forward); otherwise each pass gathers its own.
  bool keep = false;
  /// AllReduce: not a gather but a sum of per-row partial statistics the op needs whole (a layer
  /// norm's mean and variance over d_model split over "model2"), of `bytes` in `dtype`.
  CollectiveKind kind = CollectiveKind::AllGather;
  DType dtype = DType::BF16;
};

/// A convolution's geometry, per replica (models/conv_ops.hpp lowers it to `OpNode::matmul`).
/// height/width are the input's, out_height/out_width the output's. Vector ops on feature maps
/// carry it too (kernel 1, in = out), so spatial partitioning knows the rows it splits.
struct ConvShape {
  std::int64_t batch = 1, height = 0, width = 0, in_channels = 0, out_channels = 0;
  int kernel_h = 1, kernel_w = 1, stride = 1;
  std::int64_t out_height = 0, out_width = 0;
};

/// What the backward pass does with a layer op's output under a policy that decides per op
/// (RematPolicy::Named: decoder_lm's MaxText remat policies, docs/llm.md).
enum class RematAction {
  Keep,       ///< saved from the forward pass (lives in HBM until its backward readers)
  Recompute,  ///< recomputed right before the layer's backward ops
  Offload,    ///< saved to host memory over PCIe and fetched back before the layer's backward
};

/// Which forward tensors a vector op's gradient reads besides dY (training.cpp): they stay live
/// until it runs (docs/memory.md, What a gradient keeps).
enum class GradReads {
  InputsAndOutput,  ///< the general case (layer and batch norms, pooling, losses, ...)
  /// A derivative that is a function of y alone: softmax, dx = y (dy - sum(dy y)); tanh,
  /// dx = dy (1 - y^2); ReLU (also fused after a residual add), dx = dy [y > 0]
  Output,
  /// A derivative that is a function of x alone: GELU, dx = dy gelu'(x); SwiGLU,
  /// d(gate) = dy up swish'(gate), d(up) = dy swish(gate)
  Inputs,
  None,  ///< a sum (a residual add): dx = dy for every input
};

struct OpNode {
  std::string name;  ///< e.g. "encoder.3.mlp.in", "encoder.3.mlp.in.bwd_weight"
  OpKind kind = OpKind::Elementwise;
  Phase phase = Phase::Forward;
  DType dtype = DType::BF16;      ///< dtype of the inputs (bf16 for matmuls)
  DType out_dtype = DType::BF16;  ///< dtype of the output (f32 for weight gradients)
  std::vector<std::vector<std::int64_t>> shapes;  ///< logical tensor shapes, inputs then output

  // Cost per replica, before splitting.
  std::optional<MatmulShape> matmul;  ///< MXU work; HBM bytes are derived from it when split
  /// Quantized training (decoder_lm's workload.quantization, AQT): a matmul whose operands are
  /// quantized to int8 or fp8 with per-channel scales runs at the chip's rate for that dtype,
  /// pays a quantize pass over both operands and a rescale of its output on the vector unit
  /// (per_core_cost), and its gradient matmuls inherit it; a weight owner's bf16 copy is stored
  /// (and FSDP-gathered) in that dtype. BF16: an ordinary matmul.
  DType mxu_dtype = DType::BF16;
  /// Bytes per parameter of the weight copy the passes read (and FSDP gathers): 1 for a
  /// quantized owner, 2 (bf16) otherwise.
  int weight_copy_bytes() const { return is_8bit(mxu_dtype) ? 1 : dtype_bytes(DType::BF16); }
  /// Serving (workload.program = prefill or decode) with an 8-bit mxu_dtype: the weight operand
  /// (k x n) is stored quantized, so the step reads it at 1 byte and quantizes only the
  /// activations (the rescale of the output stays).
  bool weights_stored_8bit = false;
  std::optional<ConvShape> conv;
  double flops = 0;                ///< MXU FLOPs (multiply-add = 2)
  double vpu_elements = 0;         ///< elements the vector unit touches
  double vpu_ops_per_element = 0;  ///< vector ops per element
  double bytes_read = 0;           ///< HBM bytes read
  double bytes_written = 0;        ///< HBM bytes written

  // Splitting.
  OpSplit split;
  /// Bytes per replica of the partial result each core holds when a reduced dimension is split
  /// (0: the output bytes). For a LAMB norm op, the bytes of the per-tensor norms.
  double partial_bytes = 0;

  // Parameters (forward ops that own weights).
  std::int64_t params = 0;  ///< parameters this op owns (weights and biases)
  int tied_to = -1;         ///< uses the weights owned by this forward op (tied embeddings)
  bool params_split_by_model = false;   ///< the op's weights are divided over the model axis
  bool params_split_by_model2 = false;  ///< ... and over the second model axis ("model2")
  /// The op's weights are a mixture-of-experts layer's routed experts: MatmulShape::batch counts
  /// the experts, each with its own [k, n] matrix; an expert axis divides them (docs/experts.md).
  bool expert_weights = false;
  /// Of `flops`, the share the model counts (model FLOPs utilisation): 1, but for the routed
  /// experts' rows padded to capacity or to the busiest device, for one-hot dispatch (0), and
  /// for grouped-query key/value heads replicated over the model axis (decoder_lm).
  double model_flops_share = 1;
  /// Activations sharded over the model axes or the sequence axis (decoder_lm): operands the op
  /// needs whole but that arrive sharded, each all-gathered first. Ops gathering the same
  /// operand (same sources, axes, bytes and name) in one pass share one all-gather.
  std::vector<OperandGather> gathers;
  /// The partial sum over "model" (or "model2", "sequence") is reduce-scattered (its readers
  /// take it sharded), not all-reduced.
  bool scatter_partial = false;
  /// With scatter_partial: bytes per replica of the reduce-scattered tensor, divided over the
  /// degrees of scatter_divisors (the gradient of a gathered operand: dK, dV); 0: the op's output.
  double scatter_bytes = 0;
  std::vector<std::string> scatter_divisors;
  /// A resharding: the op is an all-to-all over these axes of its input (bytes_written per core),
  /// not a compute op (decoder_lm's parallelism.sequence_attention = all_to_all).
  std::vector<std::string> all_to_all_axes;

  // Backward derivation (forward ops).
  double bwd_vpu_ops_per_element = 0;                 ///< vector ops per element of the gradient op
  GradReads grad_reads = GradReads::InputsAndOutput;  ///< a vector op's gradient's saved tensors
  /// The output is a constant for backward (tf.stop_gradient: region proposals, NMS): no gradient
  /// flows into this op or through it to its inputs.
  bool stop_gradient = false;

  // Links set by derive_training_graph.
  int forward_of = -1;       ///< backward/optimizer op: the forward op it belongs to
  bool weight_grad = false;  ///< computes (a contribution to) the gradient of forward_of's weights
                             ///< (or of tied_to's weights)
  int param_owner = -1;      ///< optimizer op: the forward op whose parameters it updates
  /// Optimizer op: bytes per weight of the output its next phase reads (LAMB's f32 update
  /// direction); 0 for an op that updates weights and slots in place.
  double out_bytes_per_param = 0;

  // Rematerialization (workload.rematerialize).
  int layer = -1;          ///< forward op: the layer it belongs to (OpGraph::begin_layer), or -1
  bool recompute = false;  ///< a forward op recomputed in the backward pass (its copy)
  int recompute_of = -1;   ///< a recomputed copy: the forward op it copies
  /// Recomputed under selective rematerialisation (RematPolicy::Attention): the attention's
  /// scores, softmax and context, whose activations grow with the square of the sequence.
  bool selective_remat = false;
  /// RematPolicy::Named: what happens to this layer op's output (the builder sets it from the
  /// policy's checkpoint names).
  RematAction remat_action = RematAction::Keep;
  /// The checkpoint name MaxText gives this op's output ("qkv_proj", "query_proj", "kv_proj",
  /// "context", "out_proj", "mlpwi", "mlpwo"); empty: none.
  std::string checkpoint_name;
  /// Flash attention (decoder_lm's workload.attention = flash): one op for the scores, the causal
  /// softmax and the context, computed blockwise in VMEM (no s x s tensor in HBM). `flops` counts
  /// the full square (the MFU convention of MaxText's older tables), `matmul` the blocks on or
  /// below the diagonal that run; its backward recomputes the scores blockwise (training.cpp).
  bool flash_attention = false;
};

struct OpEdge {
  int slot = 0;  ///< operand position of the producer in the consumer's inputs
};

using OpGraphBase =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, OpNode, OpEdge>;

/// An OpGraphBase that moves in constant time. Boost 1.74's adjacency_list declares a copy
/// constructor and no move constructor (and its swap copies), so moving one (an OpGraph returned
/// or stored) copied every vertex and edge: a tenth of building a decoder's Program. Held on the
/// heap, it moves with its pointer; a copy is a deep copy.
class MovableGraphBase {
 public:
  MovableGraphBase() : g_(std::make_unique<OpGraphBase>()) {}
  MovableGraphBase(const MovableGraphBase& o) : g_(std::make_unique<OpGraphBase>(*o.g_)) {}
  MovableGraphBase& operator=(const MovableGraphBase& o) {
    if (this != &o) g_ = std::make_unique<OpGraphBase>(*o.g_);
    return *this;
  }
  MovableGraphBase(MovableGraphBase&& o) noexcept : g_(std::move(o.g_)) {
    o.g_ = std::make_unique<OpGraphBase>();  // a moved-from graph is empty, not null
  }
  MovableGraphBase& operator=(MovableGraphBase&& o) noexcept {
    std::swap(g_, o.g_);
    return *this;
  }
  ~MovableGraphBase() = default;
  OpGraphBase& operator*() { return *g_; }
  const OpGraphBase& operator*() const { return *g_; }

 private:
  std::unique_ptr<OpGraphBase> g_;
};

/// A divisibility rule a split imposes: `size` (the value of parameter `path`) must be a
/// multiple of the degree of mesh axis `axis`.
struct SplitConstraint {
  std::string axis;  ///< "model" or "spatial"
  std::string path;  ///< JSON path of the dimension, e.g. "workload.heads"
  std::int64_t size = 0;
  std::string what;  ///< "attention heads"
};

class OpGraph {
 public:
  using Vertex = int;

  /// Adds an op whose operands are produced by `inputs` (slot order). Returns its vertex.
  /// Inputs must be earlier vertices, so vertex order is a topological order.
  Vertex add(OpNode node, const std::vector<Vertex>& inputs = {});

  int size() const { return static_cast<int>(boost::num_vertices(*g_)); }
  const OpNode& node(Vertex v) const { return (*g_)[v]; }
  OpNode& node(Vertex v) { return (*g_)[v]; }
  /// Producers of v's operands, in slot order. The reference stays valid while ops are added.
  const std::vector<Vertex>& inputs(Vertex v) const { return inputs_[static_cast<std::size_t>(v)]; }
  /// (consumer, slot) pairs reading v's output, in the order they were added.
  std::vector<std::pair<Vertex, int>> consumers(Vertex v) const {
    return consumers_[static_cast<std::size_t>(v)];
  }
  const OpGraphBase& boost_graph() const { return *g_; }

  void require_divisible(SplitConstraint c) { constraints_.push_back(std::move(c)); }

  /// Ops added until end_layer() form one layer: with workload.rematerialize its activations are
  /// recomputed in the backward pass from the layer's inputs instead of kept.
  void begin_layer() { current_layer_ = layers_++; }
  void end_layer() { current_layer_ = -1; }
  int layers() const { return layers_; }
  const std::vector<SplitConstraint>& constraints() const { return constraints_; }

  std::string model;               ///< builder name
  std::int64_t replica_batch = 0;  ///< examples one replica processes per microbatch
  /// Gradient accumulation: the step runs the forward and backward ops this many times (each on
  /// replica_batch examples), summing the weight gradients in place, then syncs and updates once.
  int microbatches = 1;
  /// Tokens of one example for a sequence model that reports tokens per second (0: none).
  std::int64_t tokens_per_example = 0;
  /// f32 optimizer slots kept per weight (momentum 1, Adam and LAMB 2); set by
  /// derive_training_graph.
  int optimizer_slots = 0;
  std::string optimizer;  ///< "adam", "lamb", ... (set by derive_training_graph)
  /// Bytes of one example as the infeed delivers it (ids, images, labels); set by the builder.
  double infeed_bytes_per_example = 0;
  DType infeed_dtype = DType::BF16;  ///< dtype of the largest infeed tensor
  /// A serving step (decoder_lm's prefill and decode): the weights are held as the copy the
  /// forward reads, with no f32 master weights.
  bool serving = false;
  /// Buffers the builder sizes per core itself (the KV cache), added to the Program's resident.
  std::vector<ResidentBuffer> resident_per_core;

  // Totals over ops (per replica).
  double total_flops() const;
  double total_flops(Phase p) const;
  /// FLOPs of the ops that are not recomputed copies (the model's FLOPs).
  double model_flops() const;
  std::int64_t total_params() const;

 private:
  MovableGraphBase g_;
  /// The edges add() made, per vertex: its inputs in slot order, its (consumer, slot) pairs. What
  /// inputs() and consumers() return, without walking and sorting the graph's edge lists (a
  /// tenth of partitioning a decoder). A deque: one vertex's inputs stay put as ops are added.
  std::deque<std::vector<Vertex>> inputs_;
  std::vector<std::vector<std::pair<Vertex, int>>> consumers_;
  std::vector<SplitConstraint> constraints_;
  int current_layer_ = -1;
  int layers_ = 0;
};

}  // namespace tpusim
