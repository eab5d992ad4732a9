#pragma once
// Building blocks shared by the Transformer-family builders (BERT, Transformer big): attention
// and feed-forward sublayers in post-layer-norm form (residual add + dropout + layer norm fused),
// annotated with Megatron-style model-parallel splits:
//   QKV projection and Q / KV projections: split on output columns (= heads)      SplitDim::N
//   scores, softmax, context: split on heads (the batch of per-head products)    SplitDim::Batch
//   attention output projection: split on input rows (= heads), partial sums     SplitDim::K
//   FFN first matmul and its activation: split on columns                        SplitDim::N
//   FFN second matmul: split on rows, partial sums                               SplitDim::K
// Layer norms and residual adds are replicated on the model axis (as in Megatron-LM).
#include <cstdint>
#include <string>

#include "models/op_graph.hpp"

namespace tpusim {

struct TransformerDims {
  std::int64_t batch = 1;   ///< sequences in the replica
  std::int64_t hidden = 0;  ///< d_model
  std::int64_t heads = 0;
  std::int64_t ffn = 0;
};

/// Scores Q K^T per head over `kv_len` keys, softmax, context P V, output projection, residual
/// add of `residual` and layer norm; queries from `q_src` (q_len tokens), keys and values from
/// `kv_src`. The core of both attention sublayers (and of a decoding step against a cache).
int add_attention(OpGraph& g, const std::string& p, int residual, int q_src, int kv_src,
                  std::int64_t q_len, std::int64_t kv_len, const TransformerDims& d);

/// Self-attention over `len` tokens of `x`; returns the layer-norm output.
int add_self_attention(OpGraph& g, const std::string& prefix, int x, std::int64_t len,
                       const TransformerDims& d);

/// Encoder-decoder attention: queries from `x` (q_len tokens), keys and values projected from
/// `memory` (kv_len tokens); returns the layer-norm output.
int add_cross_attention(OpGraph& g, const std::string& prefix, int x, std::int64_t q_len,
                        int memory, std::int64_t kv_len, const TransformerDims& d);

enum class Activation { Gelu, Relu };

/// Feed-forward sublayer over `len` tokens; returns the layer-norm output.
int add_feed_forward(OpGraph& g, const std::string& prefix, int x, std::int64_t len,
                     const TransformerDims& d, Activation act);

/// Marks a weight matmul split on output columns (N) or input rows (K) of the model axis.
void split_columns(OpNode& op);
void split_rows(OpNode& op);

/// Records the divisibility rules of these splits: heads and ffn by the model degree.
void require_transformer_splits(OpGraph& g, const TransformerDims& d);

}  // namespace tpusim
