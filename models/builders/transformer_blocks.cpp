#include "models/builders/transformer_blocks.hpp"

#include "models/ops.hpp"

namespace tpusim {

void split_columns(OpNode& op) {
  op.split.model = SplitDim::N;
  op.params_split_by_model = true;
}
void split_rows(OpNode& op) {
  op.split.model = SplitDim::K;
  op.params_split_by_model = true;
}

void require_transformer_splits(OpGraph& g, const TransformerDims& d) {
  g.require_divisible({"model", "workload.heads", d.heads, "attention heads"});
  g.require_divisible({"model", "workload.ffn", d.ffn, "feed-forward width"});
}

int add_attention(OpGraph& g, const std::string& p, int residual, int q_src, int kv_src,
                  std::int64_t q_len, std::int64_t kv_len, const TransformerDims& d) {
  const std::int64_t head_dim = d.hidden / d.heads;
  const std::int64_t products = d.batch * d.heads;

  OpNode scores = activation_matmul(p + "scores", products, q_len, head_dim, kv_len);
  scores.split.model = SplitDim::Batch;
  const int s = g.add(std::move(scores), {q_src, kv_src});

  OpNode softmax =
      vector_op(OpKind::Softmax, p + "softmax", static_cast<double>(products) * q_len * kv_len, 1,
                vpu_ops::kSoftmax, vpu_ops::kSoftmaxGrad);
  softmax.split.model = SplitDim::Batch;
  const int probs = g.add(std::move(softmax), {s});

  OpNode context = activation_matmul(p + "context", products, q_len, kv_len, head_dim);
  context.split.model = SplitDim::Batch;
  const int c = g.add(std::move(context), {probs, kv_src});

  OpNode out = weight_matmul(p + "output", d.batch * q_len, d.hidden, d.hidden, true);
  split_rows(out);
  const int o = g.add(std::move(out), {c});

  return g.add(layer_norm(p + "layer_norm", d.batch * q_len, d.hidden, 2,
                          vpu_ops::kAddDropoutLayerNorm, vpu_ops::kAddDropoutLayerNormGrad),
               {o, residual});
}

int add_self_attention(OpGraph& g, const std::string& prefix, int x, std::int64_t len,
                       const TransformerDims& d) {
  const std::string p = prefix + "attention.";
  OpNode qkv = weight_matmul(p + "qkv", d.batch * len, d.hidden, 3 * d.hidden, true);
  split_columns(qkv);
  const int v = g.add(std::move(qkv), {x});
  return add_attention(g, p, x, v, v, len, len, d);
}

int add_cross_attention(OpGraph& g, const std::string& prefix, int x, std::int64_t q_len,
                        int memory, std::int64_t kv_len, const TransformerDims& d) {
  const std::string p = prefix + "cross_attention.";
  OpNode q = weight_matmul(p + "q", d.batch * q_len, d.hidden, d.hidden, true);
  split_columns(q);
  const int qv = g.add(std::move(q), {x});
  OpNode kv = weight_matmul(p + "kv", d.batch * kv_len, d.hidden, 2 * d.hidden, true);
  split_columns(kv);
  const int kvv = g.add(std::move(kv), {memory});
  return add_attention(g, p, x, qv, kvv, q_len, kv_len, d);
}

int add_feed_forward(OpGraph& g, const std::string& prefix, int x, std::int64_t len,
                     const TransformerDims& d, Activation act) {
  const std::string p = prefix + "ffn.";
  const std::int64_t tokens = d.batch * len;
  OpNode in = weight_matmul(p + "in", tokens, d.hidden, d.ffn, true);
  split_columns(in);
  const int i = g.add(std::move(in), {x});

  const bool gelu = act == Activation::Gelu;
  OpNode a = vector_op(
      OpKind::Elementwise, p + (gelu ? "gelu" : "relu"), static_cast<double>(tokens) * d.ffn, 1,
      gelu ? vpu_ops::kGelu : vpu_ops::kRelu, gelu ? vpu_ops::kGeluGrad : vpu_ops::kReluGrad);
  // GELU's derivative is a function of its input, ReLU's of its output's sign (TF's ReluGrad).
  a.grad_reads = gelu ? GradReads::Inputs : GradReads::Output;
  a.split.model = SplitDim::N;
  const int av = g.add(std::move(a), {i});

  OpNode out = weight_matmul(p + "out", tokens, d.ffn, d.hidden, true);
  split_rows(out);
  const int o = g.add(std::move(out), {av});

  return g.add(layer_norm(p + "layer_norm", tokens, d.hidden, 2, vpu_ops::kAddDropoutLayerNorm,
                          vpu_ops::kAddDropoutLayerNormGrad),
               {o, x});
}

}  // namespace tpusim
