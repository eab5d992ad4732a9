#include "models/builders/decoder_blocks.hpp"

#include <algorithm>
#include <utility>

#include "models/builders/transformer_blocks.hpp"
#include "models/ops.hpp"

namespace tpusim {
namespace {

// Vector ops per element (the conventions of models/ops.hpp).
// Rotary positions: x * cos + rotate_half(x) * sin, the tables read alongside: 2 mul, 1 add.
constexpr double kRotary = 3;
constexpr double kRotaryGrad = 3;  // the same rotation by -theta
// Causal softmax: scale, mask select, max, subtract, exp, sum, divide (no dropout).
constexpr double kCausalSoftmax = vpu_ops::kSoftmax - vpu_ops::kDropout;
constexpr double kCausalSoftmaxGrad = vpu_ops::kSoftmaxGrad - 1;  // no dropout mask
constexpr double kResidualAdd = 1;                                // per input beyond the first

// The sequence axis splits every op's tokens (`dim`: the rows of a matmul or vector op, the
// heads of the attention under all-to-all resharding).
void split_tokens(OpNode& op, const DecoderDims& d, SplitDim dim = SplitDim::M) {
  if (d.sequence_degree > 1) op.split.sequence = dim;
}

// Rows that the second model axis splits after a reduce-scatter over it (the outputs of the
// column-split matmuls: Q/K/V, the MLP's first matmul, the logits; the attention's sequences).
void split_rows_model2(OpNode& op, const DecoderDims& d, SplitDim dim = SplitDim::M) {
  if (d.model2_degree > 1) op.split.model2 = dim;
}

// With sharded activations, an op on the residual stream divides its rows over the model axis
// (and, 2D, its d_model columns over model2).
void shard_rows(OpNode& op, const DecoderDims& d) {
  if (d.shard_activations) op.split.model = SplitDim::M;
  if (d.model2_degree > 1) {
    op.split.model2 = SplitDim::N;
    op.params_split_by_model2 = op.params > 0;
  }
  split_tokens(op, d);
}

// A layer's weight matmul (Q/K/V, attention output, MLP): quantized under
// workload.quantization (the attention einsums and the logits stay bf16, as MaxText's AQT runs);
// in a serving step its weights are stored in 8 bits.
OpNode layer_matmul(const std::string& name, std::int64_t m, std::int64_t k, std::int64_t n,
                    const DecoderDims& d) {
  OpNode op = weight_matmul(name, m, k, n, d.biases);
  quantize_weights(op, d);
  return op;
}

OperandGather bf16_gather(double elements, std::vector<std::string> axes,
                          std::vector<std::string> divisors, int slot = 0) {
  OperandGather g;
  g.slot = slot;
  g.bytes = elements * dtype_bytes(DType::BF16);
  g.axes = std::move(axes);
  g.divisors = std::move(divisors);
  return g;
}

// A column-split matmul reading the (sharded) residual stream gathers it whole over "model"
// first (its d_model columns stay split over model2); 2D, its weights are split on d_model (K)
// over model2 and its partial sums reduce-scattered over model2 by rows.
void gather_rows(OpNode& op, const DecoderDims& d) {
  if (d.shard_activations)
    op.gathers.push_back(bf16_gather(static_cast<double>(d.tokens()) * d.d_model, {"model"},
                                     {"model2", "sequence"}));
  split_tokens(op, d);
  if (d.model2_degree <= 1) return;
  op.split.model2 = SplitDim::K;
  op.params_split_by_model2 = true;
  op.scatter_partial = true;
}

// A row-split matmul writing the residual stream reduce-scatters its partial sums over "model";
// 2D, it first gathers its input (`width` wide, split over "model") over model2's rows, and its
// weights and output columns are split on d_model over model2.
void scatter_rows(OpNode& op, const DecoderDims& d, std::int64_t width) {
  op.scatter_partial = d.shard_activations;
  split_tokens(op, d);
  if (d.model2_degree <= 1) return;
  op.gathers.push_back(
      bf16_gather(static_cast<double>(d.tokens()) * width, {"model2"}, {"model", "sequence"}));
  op.split.model2 = SplitDim::N;
  op.params_split_by_model2 = true;
}

// parallelism.sequence_attention = all_to_all: the resharding of a `width`-wide tensor between
// sequence-split and head-split (DeepSpeed-Ulysses), one all-to-all over "sequence".
int add_reshard(OpGraph& g, const std::string& name, const DecoderDims& d, std::int64_t width,
                int x) {
  OpNode r;
  r.name = name;
  r.kind = OpKind::Elementwise;
  r.bytes_read = r.bytes_written =
      static_cast<double>(d.tokens()) * width * dtype_bytes(DType::BF16);
  r.shapes = {{d.tokens(), width}, {d.tokens(), width}};
  r.split.model = SplitDim::N;
  split_rows_model2(r, d);
  split_tokens(r, d);
  r.all_to_all_axes = {"sequence"};
  return g.add(std::move(r), {x});
}

int add_residual(OpGraph& g, const std::string& name, const DecoderDims& d,
                 const std::vector<int>& inputs) {
  const int n = static_cast<int>(inputs.size());
  OpNode add = vector_op(OpKind::Elementwise, name, static_cast<double>(d.tokens()) * d.d_model, n,
                         kResidualAdd * (n - 1), kResidualAdd);
  add.grad_reads = GradReads::None;  // dx = dy: nothing of the forward is kept for it
  shard_rows(add, d);
  return g.add(std::move(add), inputs);
}

int add_norm(OpGraph& g, const std::string& name, const DecoderDims& d, int x) {
  OpNode ln =
      layer_norm(name, d.tokens(), d.d_model, 1, vpu_ops::kLayerNorm, vpu_ops::kLayerNormGrad);
  if (!d.biases) ln.params = d.d_model;  // scale only
  shard_rows(ln, d);
  if (d.model2_degree > 1) {
    // d_model split over model2: the per-token mean and mean square (backward: the sums of dY
    // and dY x the normalised input) summed over it first, f32.
    OperandGather stats =
        bf16_gather(static_cast<double>(d.tokens()) * 2, {"model2"}, {"model", "sequence"});
    stats.bytes = static_cast<double>(d.tokens()) * 2 * dtype_bytes(DType::F32);
    stats.name = "stats";
    stats.kind = CollectiveKind::AllReduce;
    stats.dtype = DType::F32;
    ln.gathers.push_back(std::move(stats));
  }
  return g.add(std::move(ln), {x});
}

// Serving: the new tokens' cache entries (`per_token` elements each: keys and values, or the
// latent and rotary key) written from `from` to the cache in its dtype; split on the key/value
// heads where `split_heads` (the model axis splits them), on the sequences over model2.
int add_kv_write(OpGraph& g, const std::string& p, const DecoderDims& d,
                 const std::vector<int>& from, double per_token, bool split_heads) {
  const double elements = static_cast<double>(d.tokens()) * per_token;
  OpNode w = vector_op(OpKind::Elementwise, p + "kv_cache_write", elements, 1, vpu_ops::kGather, 0);
  w.bytes_written = elements * d.kv_bytes;
  if (split_heads) w.split.model = SplitDim::N;
  split_rows_model2(w, d);
  return g.add(std::move(w), from);
}

// The context `c` (resharded back to sequence-split under all-to-all) through the output
// projection, a partial sum over the model axis.
int add_attention_out(OpGraph& g, const std::string& p, const DecoderDims& d, int c) {
  const std::int64_t hd = d.head_dim;
  if (d.sequence_all_to_all) c = add_reshard(g, p + "to_sequence", d, d.heads * hd, c);
  OpNode out = layer_matmul(p + "attention_out", d.tokens(), d.heads * hd, d.d_model, d);
  out.checkpoint_name = "out_proj";
  split_rows(out);
  scatter_rows(out, d, d.heads * hd);
  return g.add(std::move(out), {c});
}

// Sequence axis, sequence_attention = gather: each core's queries need the keys and values of the
// whole sequence, K and V (input 1) all-gathered over "sequence" (`batch x kv heads x seq_len x
// head_dim` bf16 each, divided by "model" where it splits the K/V heads and by "model2"), kept
// for the backward pass, whose gradients are reduce-scattered back (training.cpp).
void add_kv_gathers(OpNode& op, const DecoderDims& d, const char* k = "k", const char* v = "v") {
  const double kv = static_cast<double>(d.batch) * d.split_kv_heads() * d.seq * d.head_dim;
  std::vector<std::string> divisors{"model2"};
  if (d.kv_split_by_model()) divisors.push_back("model");
  for (const char* name : {k, v}) {
    if (!name) continue;
    OperandGather gather = bf16_gather(kv, {"sequence"}, divisors, 1);
    gather.name = name;
    gather.keep = true;
    op.gathers.push_back(std::move(gather));
  }
}

// Online softmax of flash attention: the causal softmax plus, per element, the rescale of the
// running sum and output by the new maximum (exp of the difference, multiply).
constexpr double kFlashSoftmax = kCausalSoftmax + 2;
constexpr double kFlashSoftmaxGrad = kCausalSoftmaxGrad + kCausalSoftmax;  // recomputed P too

// Splash attention (workload.attention = flash): per sequence and head, query blocks of
// `flash_block` tokens against key/value blocks, only those on or below the diagonal (causal):
// nb (nb + 1) / 2 of the nb^2 blocks, each two [block, head_dim] x [head_dim, block]-shaped
// products (scores and context have the same MXU tiles). The scores stay in VMEM; HBM holds Q,
// K and V (re-read once per query block that needs them), the output and its f32 log-sum-exp.
OpNode flash_attention(const std::string& name, const DecoderDims& d) {
  const std::int64_t b = std::min(d.flash_block, d.seq), hd = d.head_dim;
  const std::int64_t nb = (d.seq + b - 1) / b, blocks = nb * (nb + 1) / 2;
  const std::int64_t products = d.batch * d.heads;
  const double two = dtype_bytes(DType::BF16);
  OpNode op;
  op.name = name;
  op.kind = OpKind::Matmul;
  op.flash_attention = true;
  op.matmul = MatmulShape{2 * products * blocks, b, hd, b};
  op.flops = 4.0 * products * d.seq * d.seq * hd;  // the full square (docs/llm.md)
  op.vpu_elements = static_cast<double>(products) * blocks * b * b;
  op.vpu_ops_per_element = kFlashSoftmax;
  op.bwd_vpu_ops_per_element = kFlashSoftmaxGrad;
  const double row = static_cast<double>(products) * d.seq * hd * two;  // Q (or O) of all heads
  op.bytes_read = row + 2.0 * products * blocks * b * hd * two;         // Q; K, V per block pair
  op.bytes_written = row + static_cast<double>(products) * d.seq * dtype_bytes(DType::F32);
  op.shapes = {{products, d.seq, hd}, {products, d.seq, hd}, {products, d.seq, hd}};
  op.split.model = SplitDim::Batch;
  op.selective_remat = true;
  op.checkpoint_name = "context";
  split_rows_model2(op, d, SplitDim::Batch);
  // A sequence axis divides the block products (each core its heads under all-to-all; with K
  // and V gathered, its queries' blocks against the whole sequence's keys: load-balanced, as
  // MaxText's context parallelism orders the sequence, 1/sequence of the causal blocks).
  split_tokens(op, d, SplitDim::Batch);
  if (d.sequence_degree > 1 && !d.sequence_all_to_all) add_kv_gathers(op, d);
  return op;
}

// Q, K and V projected from the layer norm `x`: one projection split on heads where the model
// axis splits the key/value heads, else Q split and K, V whole. Returns {Q, KV} (equal: one op).
std::pair<int, int> add_qkv_projection(OpGraph& g, const std::string& p, int x,
                                       const DecoderDims& d) {
  const std::int64_t tokens = d.tokens(), hd = d.head_dim;
  int qv = -1, kvv = -1;
  if (d.kv_split_by_model()) {  // one projection, split on heads: one partial dX
    const std::int64_t kv = d.split_kv_heads();
    OpNode qkv = layer_matmul(p + "qkv", tokens, d.d_model, (d.heads + 2 * kv) * hd, d);
    // Replicated key/value heads are computed once per core that holds them, but count once in
    // the model's FLOPs.
    qkv.model_flops_share = static_cast<double>(d.heads + 2 * d.kv_heads) / (d.heads + 2 * kv);
    qkv.checkpoint_name = "qkv_proj";
    split_columns(qkv);
    gather_rows(qkv, d);
    qv = kvv = g.add(std::move(qkv), {x});
  } else {  // K and V whole on every model core
    OpNode q = layer_matmul(p + "q", tokens, d.d_model, d.heads * hd, d);
    q.checkpoint_name = "query_proj";
    split_columns(q);
    gather_rows(q, d);
    qv = g.add(std::move(q), {x});
    OpNode kv = layer_matmul(p + "kv", tokens, d.d_model, 2 * d.kv_heads * hd, d);
    kv.checkpoint_name = "kv_proj";
    gather_rows(kv, d);
    kvv = g.add(std::move(kv), {x});
  }
  return {qv, kvv};
}

// Q, K and V from the layer norm `x`, rotary positions, scores, causal softmax, context, output
// projection. Returns the projection (a partial sum over the model axis).
int add_decoder_attention(OpGraph& g, const std::string& p, int x, const DecoderDims& d) {
  const std::int64_t tokens = d.tokens(), hd = d.head_dim;
  const auto [qv, kvv] = add_qkv_projection(g, p, x, d);
  int q_src = qv, kv_src = kvv;
  if (d.rotary) {
    OpNode rot = vector_op(OpKind::Elementwise, p + "rotary",
                           static_cast<double>(tokens) * (d.heads + d.split_kv_heads()) * hd, 1,
                           kRotary, kRotaryGrad);
    rot.split.model = SplitDim::N;
    split_rows_model2(rot, d);
    split_tokens(rot, d);
    q_src = kv_src = qv == kvv ? g.add(std::move(rot), {qv}) : g.add(std::move(rot), {qv, kvv});
  }
  if (d.sequence_all_to_all)  // Q, K and V to head-split (one projection: checked on build)
    q_src = kv_src =
        add_reshard(g, p + "to_heads", d, (d.heads + 2 * d.split_kv_heads()) * hd, q_src);
  // Serving, with the key/value heads split like the query heads: the query heads of a group
  // share their key/value head, so each cached key and value is read once (the group's queries
  // as rows of one product); the cached operand in the cache's dtype. Otherwise each query head
  // reads its keys and values (training's multi-head form; over-counts the cache read of
  // grouped heads that the model axis does not split).
  const bool grouped = d.serving && d.kv_split_by_model();
  const std::int64_t ctx = d.context();
  const std::int64_t kv_heads = d.split_kv_heads();
  const std::int64_t products = grouped ? d.batch * kv_heads : d.batch * d.heads;
  const std::int64_t rows = grouped ? d.seq * (d.heads / kv_heads) : d.seq;
  if (d.flash && !d.serving) {  // serving steps: refused with flash in read_serving_dims
    OpNode flash = flash_attention(p + "flash_attention", d);
    const int f = g.add(std::move(flash), {q_src, kv_src});
    return add_attention_out(g, p, d, f);
  }
  OpNode scores = activation_matmul(p + "scores", products, rows, hd, ctx);
  OpNode softmax =
      vector_op(OpKind::Softmax, p + "softmax", static_cast<double>(products) * rows * ctx, 1,
                kCausalSoftmax, kCausalSoftmaxGrad);
  OpNode context = activation_matmul(p + "context", products, rows, ctx, hd);
  if (d.serving) {
    const double cached = static_cast<double>(products) * ctx * hd * d.kv_bytes;
    scores.bytes_read = static_cast<double>(products) * rows * hd * kBf16Bytes + cached;
    context.bytes_read = static_cast<double>(products) * rows * ctx * kBf16Bytes + cached;
    kv_src = add_kv_write(g, p, d, {kv_src}, 2.0 * d.split_kv_heads() * d.head_dim,
                          d.kv_split_by_model());
  }
  for (OpNode* op : {&scores, &softmax, &context}) {
    op->split.model = SplitDim::Batch;
    op->selective_remat = true;
    split_rows_model2(*op, d, SplitDim::Batch);  // 2D: the sequences
    // Sequence axis: the queries' rows, or (all-to-all) the heads.
    split_tokens(*op, d, d.sequence_all_to_all ? SplitDim::Batch : SplitDim::M);
  }
  if (d.sequence_degree > 1 && !d.sequence_all_to_all) {
    // K before the scores, V before the context (kept for the backward, dK and dV
    // reduce-scattered back).
    add_kv_gathers(scores, d, "k", nullptr);
    add_kv_gathers(context, d, nullptr, "v");
  }
  const int s = g.add(std::move(scores), {q_src, kv_src});
  const int probs = g.add(std::move(softmax), {s});
  context.checkpoint_name = "context";
  const int c = g.add(std::move(context), {probs, kv_src});
  return add_attention_out(g, p, d, c);
}

// Multi-head latent attention (DeepSeek-V2/V3): queries from a low-rank latent (q_a, its RMS
// norm, q_b; straight from x when q_lora_rank is 0), keys and values from another (kv_a, which
// also makes the one rotary key part the heads share, its norm, kv_b), rotary positions on the
// rotary parts, scores over qk_nope + qk_rope per head, context of v_head_dim per head, output
// projection. The latents are computed whole on every model core (their matrices are not split),
// q_b and kv_b split on their heads. Returns the projection (a partial sum over the model axis).
//
// Serving: the cache holds each token's latent and shared rotary key (kv_lora_rank +
// qk_rope_head_dim per layer), whole on every model core, since every head reads it. A prefill
// expands the latents of the cached and the new tokens through kv_b; a decode step (one new
// token) does not expand the cache but absorbs kv_b into the query and the output (DeepSeek-V2's
// inference form): per head the query's non-rotary part through kv_b's key half into the latent
// space, scores and context against the cached latents themselves (all heads as the query rows
// of one product per sequence, the cache read by each of the two einsums), and the context
// back through kv_b's value half. kv_b's two halves are its parameters either way.

// Rotary positions on the queries' rotary parts (split with the heads) and the shared key part.
int add_latent_rotary(OpGraph& g, const std::string& p, const DecoderDims& d, int q, int kv_a) {
  OpNode rot = vector_op(OpKind::Elementwise, p + "rotary",
                         static_cast<double>(d.tokens()) * (d.heads + 1) * d.qk_rope_head_dim, 1,
                         kRotary, kRotaryGrad);
  rot.split.model = SplitDim::N;
  return g.add(std::move(rot), {q, kv_a});
}

// Latent attention's output projection of the heads' values `c` (a partial sum over the model
// axis).
int add_latent_out(OpGraph& g, const std::string& p, const DecoderDims& d, int c) {
  OpNode out =
      weight_matmul(p + "attention_out", d.tokens(), d.heads * d.v_head_dim, d.d_model, false);
  out.checkpoint_name = "out_proj";
  split_rows(out);
  return g.add(std::move(out), {c});
}

// A decode step's latent attention with kv_b absorbed (add_latent_attention): `q` the queries,
// `qr` their rotary parts with the new key's, `latents` the new tokens' latents as cached,
// `cached` the bytes of the cached tokens' latents per replica. Returns the output projection.
int add_absorbed_decode(OpGraph& g, const std::string& p, const DecoderDims& d, int q, int qr,
                        int latents, double cached) {
  const std::int64_t tokens = d.tokens(), ctx = d.context(), rows = d.seq * d.heads;
  const std::int64_t width = d.kv_lora_rank + d.qk_rope_head_dim;
  OpNode absorb_q =
      activation_matmul(p + "q_absorb", d.heads, tokens, d.qk_nope_head_dim, d.kv_lora_rank);
  absorb_q.params = d.heads * d.qk_nope_head_dim * d.kv_lora_rank;  // kv_b's key half
  OpNode absorb_out =
      activation_matmul(p + "out_absorb", d.heads, tokens, d.kv_lora_rank, d.v_head_dim);
  absorb_out.params = d.heads * d.kv_lora_rank * d.v_head_dim;  // kv_b's value half
  for (OpNode* op : {&absorb_q, &absorb_out}) {
    op->split.model = SplitDim::Batch;  // the heads
    op->params_split_by_model = true;
  }
  OpNode scores = activation_matmul(p + "scores", d.batch, rows, width, ctx);
  OpNode softmax =
      vector_op(OpKind::Softmax, p + "softmax", static_cast<double>(d.batch) * rows * ctx, 1,
                kCausalSoftmax, kCausalSoftmaxGrad);
  OpNode context = activation_matmul(p + "context", d.batch, rows, ctx, d.kv_lora_rank);
  const double fresh = static_cast<double>(tokens) * width * kBf16Bytes;  // the new latents
  scores.bytes_read = static_cast<double>(d.batch) * rows * width * kBf16Bytes + fresh + cached;
  context.bytes_read = static_cast<double>(d.batch) * rows * ctx * kBf16Bytes + fresh +
                       cached * d.kv_lora_rank / width;
  scores.split.model = context.split.model = SplitDim::M;  // the heads' rows
  softmax.split.model = SplitDim::N;
  const int qa = g.add(std::move(absorb_q), {q});
  const int sc = g.add(std::move(scores), {qa, qr, latents});
  const int probs = g.add(std::move(softmax), {sc});
  const int c = g.add(std::move(context), {probs, latents});
  return add_latent_out(g, p, d, g.add(std::move(absorb_out), {c}));
}

int add_latent_attention(OpGraph& g, const std::string& p, int x, const DecoderDims& d) {
  const std::int64_t tokens = d.tokens(), qk = d.qk_nope_head_dim + d.qk_rope_head_dim;
  const std::int64_t latent_width = d.kv_lora_rank + d.qk_rope_head_dim, ctx = d.context();
  auto latent = [&](const std::string& name, std::int64_t rank, int from) {
    const int a = g.add(weight_matmul(p + name + "_a", tokens, d.d_model, rank, false), {from});
    OpNode norm = layer_norm(p + name + "_norm", tokens, rank, 1, vpu_ops::kLayerNorm,
                             vpu_ops::kLayerNormGrad);
    norm.params = rank;  // RMS norm: a scale only
    return g.add(std::move(norm), {a});
  };
  int q = x;
  std::int64_t q_in = d.d_model;
  if (d.q_lora_rank > 0) {
    q = latent("q", d.q_lora_rank, x);
    q_in = d.q_lora_rank;
  }
  OpNode qb =
      weight_matmul(p + (d.q_lora_rank > 0 ? "q_b" : "q"), tokens, q_in, d.heads * qk, false);
  qb.checkpoint_name = "query_proj";  // MaxText's MLA names its projections as MHA's
  split_columns(qb);
  q = g.add(std::move(qb), {q});
  // kv_a also makes the shared rotary key part (qk_rope_head_dim) beside the latent.
  const int kv_a = g.add(weight_matmul(p + "kv_a", tokens, d.d_model, latent_width, false), {x});
  OpNode kv_norm = layer_norm(p + "kv_norm", tokens, d.kv_lora_rank, 1, vpu_ops::kLayerNorm,
                              vpu_ops::kLayerNormGrad);
  kv_norm.params = d.kv_lora_rank;
  int kv_latent = g.add(std::move(kv_norm), {kv_a});
  int qr = -1;
  double cached = 0;  // serving: the cached tokens' latents, per replica, in the cache's dtype
  if (d.serving) {    // the new tokens' latents and rotated keys written to the cache
    qr = add_latent_rotary(g, p, d, q, kv_a);
    kv_latent = add_kv_write(g, p, d, {kv_latent, qr}, static_cast<double>(latent_width), false);
    cached = static_cast<double>(d.batch) * (ctx - d.seq) * latent_width * d.kv_bytes;
    if (d.seq == 1) return add_absorbed_decode(g, p, d, q, qr, kv_latent, cached);
  }
  // kv_b over every token the queries attend to: the sequence, or (serving) the cached tokens'
  // latents, read from the cache, and the new ones.
  OpNode kvb = weight_matmul(p + "kv_b", d.batch * ctx, d.kv_lora_rank,
                             d.heads * (d.qk_nope_head_dim + d.v_head_dim), false);
  kvb.bytes_read += cached;
  kvb.checkpoint_name = "kv_proj";
  split_columns(kvb);
  const int kv = g.add(std::move(kvb), {kv_latent});
  if (qr < 0) qr = add_latent_rotary(g, p, d, q, kv_a);
  const std::int64_t products = d.batch * d.heads;
  OpNode scores = activation_matmul(p + "scores", products, d.seq, qk, ctx);
  OpNode softmax =
      vector_op(OpKind::Softmax, p + "softmax", static_cast<double>(products) * d.seq * ctx, 1,
                kCausalSoftmax, kCausalSoftmaxGrad);
  OpNode context = activation_matmul(p + "context", products, d.seq, ctx, d.v_head_dim);
  for (OpNode* op : {&scores, &softmax, &context}) {
    op->split.model = SplitDim::Batch;
    op->selective_remat = true;
  }
  const int sc = g.add(std::move(scores), {qr, kv});
  const int probs = g.add(std::move(softmax), {sc});
  context.checkpoint_name = "context";
  return add_latent_out(g, p, d, g.add(std::move(context), {probs, kv}));
}

// GELU: in, gelu, out. SwiGLU: gate and up as one [d_model, 2 d_ff] matmul, swish(gate) * up,
// down. Returns the down projection (a partial sum over the model axis).
int add_decoder_mlp(OpGraph& g, const std::string& p, int x, const DecoderDims& d) {
  const std::int64_t tokens = d.tokens();
  const std::int64_t width = d.swiglu ? 2 * d.d_ff : d.d_ff;
  OpNode in = layer_matmul(p + "mlp.in", tokens, d.d_model, width, d);
  in.checkpoint_name = "mlpwi";
  split_columns(in);
  gather_rows(in, d);
  const int i = g.add(std::move(in), {x});
  OpNode act = d.swiglu ? vector_op(OpKind::Elementwise, p + "mlp.swiglu",
                                    static_cast<double>(tokens) * d.d_ff, 2, kSwiglu, kSwigluGrad)
                        : vector_op(OpKind::Elementwise, p + "mlp.gelu",
                                    static_cast<double>(tokens) * d.d_ff, 1, vpu_ops::kGelu,
                                    vpu_ops::kGeluGrad);
  act.grad_reads = GradReads::Inputs;  // gelu'(x), swish'(gate) and up: not the output
  act.split.model = SplitDim::N;
  split_rows_model2(act, d);
  split_tokens(act, d);
  const int a = g.add(std::move(act), {i});
  OpNode out = layer_matmul(p + "mlp.out", tokens, d.d_ff, d.d_model, d);
  out.checkpoint_name = "mlpwo";
  split_rows(out);
  scatter_rows(out, d, d.d_ff);
  return g.add(std::move(out), {a});
}

}  // namespace

void quantize_weights(OpNode& op, const DecoderDims& d, double weights_read) {
  const MatmulShape& s = *op.matmul;
  const double b = static_cast<double>(s.batch);
  op.mxu_dtype = d.quantization;
  // Serving: the weights are stored quantized (read at one byte, not quantized per step).
  op.weights_stored_8bit = d.serving && is_8bit(d.quantization);
  const double weight_bytes = op.weights_stored_8bit ? 1 : dtype_bytes(DType::BF16);
  op.bytes_read =
      b * s.m * s.k * dtype_bytes(DType::BF16) + b * s.k * s.n * weight_bytes * weights_read;
}

DecoderEmbeddings add_decoder_embeddings(OpGraph& g, const DecoderDims& d) {
  DecoderEmbeddings e;
  OpNode lookup = embedding_lookup("embed.tokens", d.tokens(), d.vocab, d.d_model);
  lookup.split.model = SplitDim::K;
  lookup.params_split_by_model = true;
  lookup.scatter_partial = d.shard_activations;
  split_tokens(lookup, d);
  if (d.model2_degree > 1) {  // the table's d_model columns over model2
    lookup.split.model2 = SplitDim::N;
    lookup.params_split_by_model2 = true;
  }
  e.lookup = e.out = g.add(std::move(lookup));
  if (!d.rotary) {
    OpNode pos = vector_op(OpKind::Elementwise, "embed.positions",
                           static_cast<double>(d.tokens()) * d.d_model, 1, 2 * vpu_ops::kGather, 1);
    pos.params = (d.max_len > 0 ? d.max_len : d.seq) * d.d_model;
    shard_rows(pos, d);
    e.out = g.add(std::move(pos), {e.lookup});
  }
  return e;
}

int add_decoder_layer(OpGraph& g, const std::string& p, int x, const DecoderDims& d, bool moe) {
  // The MLP's outputs: the dense MLP, or the routed experts and the shared ones (one MLP of
  // shared_experts x expert_d_ff, as DeepSeek's).
  auto mlp = [&](int ln) {
    if (!moe) return std::vector<int>{add_decoder_mlp(g, p, ln, d)};
    std::vector<int> out{add_moe_experts(g, p, ln, d)};
    if (d.shared_experts > 0) {
      DecoderDims shared = d;
      shared.d_ff = d.shared_experts * d.expert_d_ff;
      out.push_back(add_decoder_mlp(g, p + "shared.", ln, shared));
    }
    return out;
  };
  auto attention = [&](int ln) {
    return d.mla ? add_latent_attention(g, p + "attention.", ln, d)
                 : add_decoder_attention(g, p + "attention.", ln, d);
  };
  if (d.parallel) {
    const int ln = add_norm(g, p + "layer_norm", d, x);
    std::vector<int> sum{attention(ln)};
    for (int m : mlp(ln)) sum.push_back(m);
    sum.push_back(x);
    return add_residual(g, p + "residual", d, sum);
  }
  const int ln1 = add_norm(g, p + "attention.layer_norm", d, x);
  const int a = attention(ln1);
  const int r1 = add_residual(g, p + "attention.residual", d, {a, x});
  const int ln2 = add_norm(g, p + "mlp.layer_norm", d, r1);
  std::vector<int> sum = mlp(ln2);
  sum.push_back(r1);
  return add_residual(g, p + "mlp.residual", d, sum);
}

void add_decoder_sampler(OpGraph& g, const DecoderDims& d, int x, int tied_lookup) {
  DecoderDims last = d;  // the last token of each sequence
  last.seq = 1;
  const int ln = add_norm(g, "head.layer_norm", last, x);
  OpNode logits = weight_matmul("head.logits", d.batch, d.d_model, d.vocab, false);
  split_columns(logits);
  gather_rows(logits, last);
  if (tied_lookup >= 0) {
    logits.params = 0;
    logits.params_split_by_model = false;
    logits.tied_to = tied_lookup;
  }
  const int l = g.add(std::move(logits), {ln});
  // Greedy or top-p sampling: a max and a sum over the vocabulary split on the model axis.
  OpNode sample = cross_entropy_loss("head.sample", d.batch, d.vocab);
  sample.kind = OpKind::Softmax;
  sample.split.model = SplitDim::K;
  split_rows_model2(sample, last);
  g.add(std::move(sample), {l});
}

void add_decoder_head(OpGraph& g, const DecoderDims& d, int x, int tied_lookup) {
  const int ln = add_norm(g, "head.layer_norm", d, x);
  OpNode logits = weight_matmul("head.logits", d.tokens(), d.d_model, d.vocab, false);
  split_columns(logits);
  gather_rows(logits, d);
  if (tied_lookup >= 0) {
    logits.params = 0;
    logits.params_split_by_model = false;
    logits.tied_to = tied_lookup;
  }
  const int l = g.add(std::move(logits), {ln});
  OpNode loss = cross_entropy_loss("head.loss", d.tokens(), d.vocab);
  loss.split.model = SplitDim::K;
  split_rows_model2(loss, d);
  split_tokens(loss, d);
  g.add(std::move(loss), {l});
}

}  // namespace tpusim
