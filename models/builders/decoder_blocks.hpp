#pragma once
// The pieces of the decoder-only language model (models/builders/decoder_lm.cpp): embeddings,
// one pre-layer-norm decoder layer (serial or parallel attention and MLP), the output head.
// Splits on the "model" axis as decoder_lm.cpp describes.
#include <cstdint>
#include <string>

#include "models/op_graph.hpp"

namespace tpusim {

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
  std::int64_t model_degree = 1;  ///< parallelism.model: K and V split only if it divides kv_heads
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
  /// workload.quantization: the MXU dtype of the layers' weight matmuls (BF16: none; I8, F8)
  DType quantization = DType::BF16;
  /// workload.attention = flash: splash attention blockwise in VMEM, causal blocks skipped
  bool flash = false;
  std::int64_t flash_block = 512;  ///< workload.flash_block: query and key/value block, tokens
  std::int64_t tokens() const { return batch * seq; }
  bool kv_split_by_model() const { return kv_heads % model_degree == 0; }
};

struct DecoderEmbeddings {
  int lookup = -1;  ///< the word-embedding gather (owns the table)
  int out = -1;     ///< the embeddings as the first layer reads them
};

/// Token lookup split on the vocabulary; with learned positions, the position table added.
DecoderEmbeddings add_decoder_embeddings(OpGraph& g, const DecoderDims& d);

/// One decoder layer reading the residual stream `x`; returns the new residual stream.
int add_decoder_layer(OpGraph& g, const std::string& prefix, int x, const DecoderDims& d);

/// Final layer norm, output projection (tied to `tied_lookup` if >= 0, else its own matrix) split
/// on the vocabulary, softmax cross-entropy.
void add_decoder_head(OpGraph& g, const DecoderDims& d, int x, int tied_lookup);

}  // namespace tpusim
