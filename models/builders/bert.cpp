// BERT-Large pretraining (MLPerf v0.7): embeddings, post-LN encoder, masked-LM head on the masked
// positions only (decoder tied to the word embeddings), next-sentence head, LAMB.
// Dimensions from Devlin et al. 2019 and the MLPerf v0.7 reference (see shared reference
// workloads.md): 24 layers, hidden 1024, 16 heads, ffn 4096, sequence 512, vocabulary 30522,
// 76 masked positions per sequence.
#include <optional>

#include "core/errors.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "models/builders/transformer_blocks.hpp"
#include "models/eval_ops.hpp"
#include "models/model_builder.hpp"
#include "models/ops.hpp"
#include "models/training.hpp"

namespace tpusim {
namespace {
using T = ParamType;
const char* kBertModel = "bert_large";

// One parameter per line reads as a table.
// clang-format off
const Param<std::int64_t> kBertLayers{{"workload.layers", T::Integer, "", 24, "encoder layers", 1, 1000, {}, "workload.model", kBertModel}};
const Param<std::int64_t> kBertHidden{{"workload.hidden", T::Integer, "", 1024, "hidden width (d_model)", 1, 1e6, {}, "workload.model", kBertModel}};
const Param<std::int64_t> kBertHeads{{"workload.heads", T::Integer, "", 16, "attention heads (hidden / heads = head width)", 1, 1e4, {}, "workload.model", kBertModel}};
const Param<std::int64_t> kBertFfn{{"workload.ffn", T::Integer, "", 4096, "feed-forward inner width (GELU)", 1, 1e6, {}, "workload.model", kBertModel}};
const Param<std::int64_t> kBertSeqLen{{"workload.seq_len", T::Integer, "tokens", 512, "tokens per sequence", 1, 1e6, {}, "workload.model", kBertModel}};
const Param<std::int64_t> kBertVocab{{"workload.vocab", T::Integer, "", 30522, "word-piece vocabulary (word embedding rows, MLM classes)", 2, 1e8, {}, "workload.model", kBertModel}};
const Param<std::int64_t> kBertTypeVocab{{"workload.type_vocab", T::Integer, "", 2, "token-type (segment) embedding rows", 1, 1e3, {}, "workload.model", kBertModel}};
const Param<bool> kBertOneHotEmbeddings{{"workload.one_hot_embeddings", T::Boolean, "", false, "look up word embeddings as a one-hot matmul [tokens, vocab] x [vocab, hidden] on the MXU (BERT's TPU code option use_one_hot_embeddings) instead of a gather", -kInf, kInf, {}, "workload.model", kBertModel}};
const Param<std::int64_t> kBertMaskedPositions{{"workload.masked_positions", T::Integer, "tokens", 76, "masked-LM predictions per sequence (the MLM head runs on these only)", 1, 1e6, {}, "workload.model", kBertModel}};
// clang-format on

// The one-hot form: an MXU matmul whose one-hot operand is generated inside the fusion (iota ==
// id), so HBM reads only the ids and the table. Its backward is the table gradient alone (the ids
// need none): one-hot^T x dY.
OpNode one_hot_embedding(const std::string& name, std::int64_t tokens, std::int64_t vocab,
                         std::int64_t h) {
  OpNode op = weight_matmul(name, tokens, vocab, h, false);
  op.bytes_read = static_cast<double>(tokens) * dtype_bytes(DType::I32) +
                  static_cast<double>(vocab) * h * dtype_bytes(DType::BF16);
  return op;
}

// The embeddings' ops: the word lookup's (whose table the masked-LM decoder shares) and the
// layer norm's, which the encoder reads.
struct Embeddings {
  int word = -1;
  int out = -1;
};

// Embeddings: word lookup split on the vocabulary (partial rows, all-reduced), position and
// token-type rows added, then layer norm with dropout.
Embeddings add_embeddings(OpGraph& g, const Config& cfg, std::int64_t tokens, std::int64_t seq,
                          std::int64_t vocab, std::int64_t h) {
  OpNode word = kBertOneHotEmbeddings(cfg) ? one_hot_embedding("embeddings.word", tokens, vocab, h)
                                           : embedding_lookup("embeddings.word", tokens, vocab, h);
  word.split.model = SplitDim::K;
  word.params_split_by_model = true;
  Embeddings e;
  e.word = g.add(std::move(word));
  OpNode pos = vector_op(OpKind::Elementwise, "embeddings.position_type",
                         static_cast<double>(tokens) * h, 1, 2 * vpu_ops::kGather, 1);
  pos.params = (seq + kBertTypeVocab(cfg)) * h;
  const int pos_v = g.add(std::move(pos), {e.word});
  e.out = g.add(
      layer_norm("embeddings.layer_norm", tokens, h, 1, vpu_ops::kLayerNorm + vpu_ops::kDropout,
                 vpu_ops::kLayerNormGrad + vpu_ops::kDropout),
      {pos_v});
  return e;
}

// Masked-LM head on the `rows` masked positions of the encoder output `x`: gather, dense + GELU +
// layer norm (replicated on the model axis), decoder tied to the word embeddings `word` with its
// own bias, split on the vocabulary like the embedding, softmax cross-entropy over the (split)
// vocabulary. Returns the decoder's logits.
int add_mlm_head(OpGraph& g, int x, int word, std::int64_t rows, std::int64_t h,
                 std::int64_t vocab) {
  const int gathered =
      g.add(vector_op(OpKind::Elementwise, "mlm.gather_masked", static_cast<double>(rows) * h, 1,
                      vpu_ops::kGather, vpu_ops::kGather),
            {x});
  const int dense = g.add(weight_matmul("mlm.transform", rows, h, h, true), {gathered});
  OpNode gelu = vector_op(OpKind::Elementwise, "mlm.gelu", static_cast<double>(rows) * h, 1,
                          vpu_ops::kGelu, vpu_ops::kGeluGrad);
  gelu.grad_reads = GradReads::Inputs;  // gelu'(x)
  const int act = g.add(std::move(gelu), {dense});
  const int mlm_ln =
      g.add(layer_norm("mlm.layer_norm", rows, h, 1, vpu_ops::kLayerNorm, vpu_ops::kLayerNormGrad),
            {act});
  OpNode decoder = weight_matmul("mlm.decoder", rows, h, vocab, true);
  decoder.params = vocab;  // the output bias; the weights are the word embeddings
  decoder.tied_to = word;
  split_columns(decoder);
  const int logits = g.add(std::move(decoder), {mlm_ln});
  OpNode mlm_loss = cross_entropy_loss("mlm.loss", rows, vocab);
  mlm_loss.split.model = SplitDim::K;
  g.add(std::move(mlm_loss), {logits});
  return logits;
}

class BertLarge final : public ModelBuilder {
 public:
  bool supports_model_parallel() const override { return true; }

  OpGraph build(const Config& cfg, std::int64_t batch) const override {
    OpGraph g = forward(cfg, batch).graph;
    derive_training_graph(g, OptimizerKind::Lamb, cfg);
    return g;
  }

  /// The MLPerf evaluation: the same forward pass (losses included), then the masked-LM accuracy
  /// (argmax over the vocabulary of each masked position, compared with its label).
  std::optional<OpGraph> build_eval(const Config& cfg, std::int64_t batch) const override {
    Forward f = forward(cfg, batch);
    f.graph.add(top_k_select("mlm.accuracy", f.mlm_rows, f.vocab, 1, true), {f.mlm_logits});
    return std::move(f.graph);
  }

 private:
  struct Forward {
    OpGraph graph;
    int mlm_logits = -1;  ///< the masked-LM decoder's output (vocabulary-split logits)
    std::int64_t mlm_rows = 0;
    std::int64_t vocab = 0;
  };

  Forward forward(const Config& cfg, std::int64_t batch) const {
    const std::int64_t layers = kBertLayers(cfg);
    const std::int64_t seq = kBertSeqLen(cfg);
    const std::int64_t vocab = kBertVocab(cfg);
    const std::int64_t masked = kBertMaskedPositions(cfg);
    const TransformerDims d{batch, kBertHidden(cfg), kBertHeads(cfg), kBertFfn(cfg)};
    if (d.hidden % d.heads != 0)
      throw ConfigError("workload.heads", std::to_string(d.heads) +
                                              " heads do not divide workload.hidden = " +
                                              std::to_string(d.hidden) + "; use a divisor of it");
    if (masked > seq)
      throw ConfigError(
          "workload.masked_positions",
          std::to_string(masked) + " exceeds workload.seq_len " + std::to_string(seq));

    Forward f;
    OpGraph& g = f.graph;
    g.model = kBertModel;
    g.replica_batch = batch;
    require_transformer_splits(g, d);
    g.require_divisible(
        {"model", "workload.vocab", vocab, "vocabulary (embedding and MLM softmax)"});
    const std::int64_t tokens = batch * seq;
    const std::int64_t h = d.hidden;

    const Embeddings e = add_embeddings(g, cfg, tokens, seq, vocab, h);
    int x = e.out;

    for (std::int64_t l = 0; l < layers; ++l) {
      const std::string p = "encoder." + std::to_string(l) + ".";
      g.begin_layer();
      x = add_self_attention(g, p, x, seq, d);
      x = add_feed_forward(g, p, x, seq, d, Activation::Gelu);
      g.end_layer();
    }

    const std::int64_t rows = batch * masked;
    const int logits = add_mlm_head(g, x, e.word, rows, h, vocab);

    // Next-sentence head on the first token: pooler dense + tanh, 2-way classifier.
    const int pooled = g.add(weight_matmul("nsp.pooler", batch, h, h, true), {x});
    OpNode tanh_op = vector_op(OpKind::Elementwise, "nsp.tanh", static_cast<double>(batch) * h, 1,
                               vpu_ops::kTanh, vpu_ops::kTanhGrad);
    tanh_op.grad_reads = GradReads::Output;  // 1 - y^2
    const int tanh = g.add(std::move(tanh_op), {pooled});
    const int cls = g.add(weight_matmul("nsp.classifier", batch, h, 2, true), {tanh});
    g.add(cross_entropy_loss("nsp.loss", batch, 2), {cls});

    // Infeed per sequence (MLPerf reference features): input_ids, input_mask, segment_ids per
    // token; masked_lm_positions, _ids, _weights per masked position; next_sentence_labels.
    g.infeed_bytes_per_example = static_cast<double>(3 * seq + 3 * masked + 1) * 4;
    g.infeed_dtype = DType::I32;
    f.mlm_logits = logits;
    f.mlm_rows = rows;
    f.vocab = vocab;
    return f;
  }
};

// 8192: the largest MLPerf v0.7 run (reference table).
const ModelRegistrar kBertRegister{
    {kBertModel, 8192, "sequences per training step over all replicas"},
    [] { return std::make_unique<BertLarge>(); }};

}  // namespace
}  // namespace tpusim
