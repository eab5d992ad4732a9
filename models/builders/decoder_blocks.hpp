#pragma once
// The pieces of the decoder-only language model (models/builders/decoder_lm.cpp): embeddings,
// one pre-layer-norm decoder layer (serial or parallel attention and MLP), the output head.
// Splits on the "model" axis as decoder_lm.cpp describes.
#include <cstdint>
#include <string>

#include "models/op_graph.hpp"

namespace tpusim {

/// SwiGLU's vector work per element, the dense MLP's and the experts': swish(gate) * up = gate *
/// sigmoid(gate) * up, sigmoid as exp, add, reciprocal; its gradient the sigmoid again, its
/// derivative and both products' gradients.
inline constexpr double kSwiglu = 6;
inline constexpr double kSwigluGrad = 10;

struct DecoderDims {
  std::int64_t batch = 1;  ///< sequences in the replica (one microbatch)
  std::int64_t seq = 0;    ///< tokens per sequence
  std::int64_t d_model = 0;
  std::int64_t heads = 0;     ///< query heads
  std::int64_t kv_heads = 0;  ///< key/value heads (== heads: multi-head; 1: multi-query)
  std::int64_t head_dim = 0;
  std::int64_t d_ff = 0;
  std::int64_t vocab = 0;
  bool parallel = false;  ///< attention and MLP from one layer norm, summed (PaLM)
  bool swiglu = false;    ///< SwiGLU MLP (three matrices) instead of GELU (two)
  bool rotary = false;    ///< rotary positions instead of a learned table
  bool biases = true;
  /// parallelism.model: K and V split on their heads where it divides kv_heads, or is a multiple
  /// of grouped-query kv_heads (kv_replicas)
  std::int64_t model_degree = 1;
  /// parallelism.shard_activations: the residual stream, layer norms and adds sharded over the
  /// model axis (gathered before the column-split matmuls, reduce-scattered after the row-split)
  bool shard_activations = false;
  /// parallelism.model2: 2D weight-stationary sharding, every matrix split on d_model over it
  std::int64_t model2_degree = 1;
  /// parallelism.sequence: activations split along the sequence over the "sequence" axis
  std::int64_t sequence_degree = 1;
  /// parallelism.sequence_attention = all_to_all: attention resharded from sequence-split to
  /// head-split (and back) by all-to-alls instead of gathering K and V
  bool sequence_all_to_all = false;
  /// A serving step (workload.program = prefill or decode): `seq` new tokens per sequence attend
  /// to `kv_len` tokens already in its KV cache and to themselves; their keys and values are
  /// written to the cache; the head projects only the last token of each sequence and samples.
  bool serving = false;
  std::int64_t kv_len = 0;   ///< serving: tokens already cached per sequence
  double kv_bytes = 2;       ///< serving: bytes of one cached key or value element
  std::int64_t max_len = 0;  ///< learned position table rows (0: seq)
  /// Multi-head latent attention (workload.attention_type = mla, DeepSeek-V2/V3): queries from a
  /// q_lora_rank latent (0: straight from the residual stream), keys and values from a
  /// kv_lora_rank latent, each head's query/key qk_nope_head_dim + qk_rope_head_dim wide (the
  /// rotary key part shared by the heads), its value v_head_dim wide
  bool mla = false;
  std::int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0,
               v_head_dim = 0;
  /// Mixture-of-experts MLPs (docs/experts.md; 0 experts: every MLP dense): routed experts, top-k
  /// per token, each a gated MLP of expert_d_ff, plus shared experts run on every token
  std::int64_t experts = 0, experts_per_token = 1, expert_d_ff = 0, shared_experts = 0;
  bool capacity_dispatch = false;  ///< einsum dispatch to capacity (dropping) vs dropless
  double capacity_factor = 1;      ///< capacity per expert over tokens x top-k / experts
  double expert_imbalance = 1;     ///< the busiest expert's tokens over the mean
  std::int64_t expert_degree = 1;  ///< parallelism.expert: the experts divided over it
  /// workload.quantization: the MXU dtype of the layers' weight matmuls (BF16: none; I8, F8)
  DType quantization = DType::BF16;
  /// workload.attention = flash: splash attention blockwise in VMEM, causal blocks skipped
  bool flash = false;
  std::int64_t flash_block = 512;  ///< workload.flash_block: query and key/value block, tokens
  std::int64_t tokens() const { return batch * seq; }
  /// Keys each query attends to: the sequence (training), or the cache and the new tokens.
  std::int64_t context() const { return serving ? kv_len + seq : seq; }
  /// Grouped-query heads (kv_heads > 1) over a model axis that is a multiple of them: each head
  /// is held by model_degree / kv_heads cores, each core the one head its query heads share (as
  /// Megatron-LM and vLLM run tensor parallelism above the key/value heads); 1 otherwise.
  std::int64_t kv_replicas() const {
    return kv_heads > 1 && model_degree > kv_heads && model_degree % kv_heads == 0
               ? model_degree / kv_heads
               : 1;
  }
  /// Key/value heads as the model axis splits them: the heads with their replicas.
  std::int64_t split_kv_heads() const { return kv_heads * kv_replicas(); }
  bool kv_split_by_model() const { return split_kv_heads() % model_degree == 0; }
};

struct DecoderEmbeddings {
  int lookup = -1;  ///< the word-embedding gather (owns the table)
  int out = -1;     ///< the embeddings as the first layer reads them
};

/// Token lookup split on the vocabulary; with learned positions, the position table added.
DecoderEmbeddings add_decoder_embeddings(OpGraph& g, const DecoderDims& d);

/// One decoder layer reading the residual stream `x`; returns the new residual stream. `moe`: its
/// MLP is the mixture of experts of `d` (routed and shared), else the dense MLP.
int add_decoder_layer(OpGraph& g, const std::string& prefix, int x, const DecoderDims& d,
                      bool moe = false);

/// The routed experts of a mixture-of-experts layer reading the layer norm `x` (moe_blocks.cpp):
/// router, top-k, dispatch (dropless: sorted tokens and grouped matmuls; capacity: one-hot
/// einsums), the experts' gated MLPs, the all-to-alls of an expert axis, the weighted combine.
/// Returns the combined output (a partial sum over the model axis).
int add_moe_experts(OpGraph& g, const std::string& prefix, int x, const DecoderDims& d);

/// A layer's weight matmul as workload.quantization runs it: at the int8 or fp8 MXU rate, and in
/// a serving step with 8-bit weights the weight operand read at one byte; `weights_read`, the
/// share of the weight operand the step reads (1 but for routed experts no token chose).
void quantize_weights(OpNode& op, const DecoderDims& d, double weights_read = 1);

/// Of the tokens x top-k routed, the share past capacity: capacity `capacity_factor` x the mean
/// per expert, the busiest of `experts` receiving `imbalance` x the mean and the others sharing
/// the rest equally. Uniform routing (imbalance 1) with a capacity factor of at least 1 drops
/// nothing.
double moe_dropped_fraction(std::int64_t experts, double capacity_factor, double imbalance);

/// The busiest device's routed tokens over the mean device's when `per_device` of `experts`
/// experts sit on each device (same distribution): `imbalance` with one expert per device, 1 with
/// all of them on one.
double moe_device_imbalance(std::int64_t experts, std::int64_t per_device, double imbalance);

/// Serving: final layer norm, the output projection of each sequence's last token, sampling
/// (a softmax over the vocabulary split on the model axis).
void add_decoder_sampler(OpGraph& g, const DecoderDims& d, int x, int tied_lookup);

/// Final layer norm, output projection (tied to `tied_lookup` if >= 0, else its own matrix) split
/// on the vocabulary, softmax cross-entropy.
void add_decoder_head(OpGraph& g, const DecoderDims& d, int x, int tied_lookup);

}  // namespace tpusim
