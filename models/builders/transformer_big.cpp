// Transformer (big) for WMT English-German (MLPerf v0.7): 6 encoder and 6 decoder layers,
// d_model 1024, 16 heads, ffn 4096 with ReLU, one embedding table of 33,708 sub-words shared by
// the source and target embeddings and the pre-softmax projection, 256-token packed sequences
// (JAX submission), Adam. Vaswani et al. 2017 (post-layer-norm form, as in the paper).
#include <optional>
#include <utility>

#include "core/errors.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"
#include "models/builders/transformer_blocks.hpp"
#include "models/builders/transformer_decode.hpp"
#include "models/model_builder.hpp"
#include "models/ops.hpp"
#include "models/training.hpp"

namespace tpusim {
namespace {
using T = ParamType;
const char* kTransformerBigModel = "transformer_big";

// One parameter per line reads as a table.
// clang-format off
const Param<std::int64_t> kTransformerBigEncoderLayers{{"workload.encoder_layers", T::Integer, "", 6, "encoder layers", 1, 1000, {}, "workload.model", kTransformerBigModel}};
const Param<std::int64_t> kTransformerBigDecoderLayers{{"workload.decoder_layers", T::Integer, "", 6, "decoder layers", 1, 1000, {}, "workload.model", kTransformerBigModel}};
const Param<std::int64_t> kTransformerBigHidden{{"workload.hidden", T::Integer, "", 1024, "model width (d_model)", 1, 1e6, {}, "workload.model", kTransformerBigModel}};
const Param<std::int64_t> kTransformerBigHeads{{"workload.heads", T::Integer, "", 16, "attention heads (hidden / heads = head width)", 1, 1e4, {}, "workload.model", kTransformerBigModel}};
const Param<std::int64_t> kTransformerBigFfn{{"workload.ffn", T::Integer, "", 4096, "feed-forward inner width (ReLU)", 1, 1e6, {}, "workload.model", kTransformerBigModel}};
const Param<std::int64_t> kTransformerBigVocab{{"workload.vocab", T::Integer, "", 33708, "shared source/target sub-word vocabulary", 2, 1e8, {}, "workload.model", kTransformerBigModel}};
const Param<std::int64_t> kTransformerBigSeqLen{{"workload.seq_len", T::Integer, "tokens", 256, "tokens per packed source and per packed target sequence", 1, 1e6, {}, "workload.model", kTransformerBigModel}};
// Beam 4: the MLPerf Transformer reference's BLEU evaluation (beam search, beam size 4).
const Param<std::int64_t> kTransformerBigBeamSize{{"workload.beam_size", T::Integer, "", 4, "evaluation program: beams per sentence in beam-search decoding", 1, 1024, {}, "workload.model", kTransformerBigModel}};
// 97 tokens: an assumption (the longest newstest2014 sentences in sub-words plus headroom);
// the eval sources are padded to the same length. docs/train.md.
const Param<std::int64_t> kTransformerBigDecodeLength{{"workload.decode_length", T::Integer, "tokens", 97, "evaluation program: decoding steps (maximum output length); the source sentences are padded to this length too", 1, 1e5, {}, "workload.model", kTransformerBigModel}};
// clang-format on

class TransformerBig final : public ModelBuilder {
 public:
  bool supports_model_parallel() const override { return true; }

  /// Pre-tokenised records parsed; the training sentences packed into rows of workload.seq_len
  /// tokens, inputs and targets (the eval sentences are decoded one by one: not packed).
  void input_pipeline(PipelineBuilder& p, const Config& cfg, PipelinePass pass) const override {
    p.parse_record();
    if (pass == PipelinePass::Train)
      p.add("packing", host_cost::kPack, "tokens",
            2.0 * static_cast<double>(kTransformerBigSeqLen(cfg)));
  }

  /// BLEU over the decoded sentences, taken to block the next device loop (ASSUMPTION: the JAX
  /// run scores between epochs in its training loop; docs/train.md).
  void eval_metric(MetricBuilder& m, const Config& cfg, double examples) const override {
    add_bleu_metric(m, examples, kTransformerBigDecodeLength(cfg));
    m.metric().blocking = true;
  }

  OpGraph build(const Config& cfg, std::int64_t batch) const override {
    const std::int64_t dec_layers = kTransformerBigDecoderLayers(cfg);
    const std::int64_t seq = kTransformerBigSeqLen(cfg);
    const std::int64_t vocab = kTransformerBigVocab(cfg);
    Encoded enc = encode(cfg, batch, seq);
    OpGraph& g = enc.graph;
    const TransformerDims& d = enc.dims;
    const int table = enc.table;
    const int memory = enc.memory;
    const std::int64_t tokens = batch * seq;
    const std::int64_t h = d.hidden;

    int y = embed(g, "decoder.", tokens, vocab, h, table).second;
    for (std::int64_t l = 0; l < dec_layers; ++l) {
      const std::string p = "decoder." + std::to_string(l) + ".";
      g.begin_layer();
      y = add_self_attention(g, p, y, seq, d);  // causal mask: same work on the MXU
      y = add_cross_attention(g, p, y, seq, memory, seq, d);
      y = add_feed_forward(g, p, y, seq, d, Activation::Relu);
      g.end_layer();
    }

    // Pre-softmax projection with the shared table, split on the vocabulary; label-smoothed
    // cross-entropy over the split vocabulary.
    OpNode logits = weight_matmul("output.logits", tokens, h, vocab, false);
    logits.params = 0;
    logits.tied_to = table;
    split_columns(logits);
    const int lv = g.add(std::move(logits), {y});
    OpNode loss = cross_entropy_loss("output.loss", tokens, vocab);
    loss.vpu_ops_per_element += 1;  // label smoothing: the mean over classes
    loss.split.model = SplitDim::K;
    g.add(std::move(loss), {lv});

    // Infeed per packed pair: inputs and targets with their packing segment ids and positions.
    g.infeed_bytes_per_example = static_cast<double>(6 * seq) * 4;
    g.infeed_dtype = DType::I32;
    derive_training_graph(g, OptimizerKind::Adam, cfg);
    return std::move(enc.graph);
  }

  /// The MLPerf BLEU evaluation: the encoder over the (padded) source sentences, then beam-search
  /// decoding of workload.decode_length steps with workload.beam_size beams.
  std::optional<OpGraph> build_eval(const Config& cfg, std::int64_t batch) const override {
    BeamSearch b;
    b.length = kTransformerBigDecodeLength(cfg);
    b.source_len = b.length;
    b.beam = kTransformerBigBeamSize(cfg);
    b.vocab = kTransformerBigVocab(cfg);
    b.decoder_layers = kTransformerBigDecoderLayers(cfg);
    Encoded enc = encode(cfg, batch, b.source_len);
    b.dims = enc.dims;
    add_beam_search(enc.graph, enc.memory, enc.table, b);
    enc.graph.infeed_bytes_per_example = static_cast<double>(b.source_len) * 4;  // source ids
    enc.graph.infeed_dtype = DType::I32;
    return std::move(enc.graph);
  }

 private:
  struct Encoded {
    OpGraph graph;
    TransformerDims dims;
    int table = -1;   ///< the source embedding op, owner of the shared table
    int memory = -1;  ///< the encoder's output
  };

  // Source (or target) embedding: the shared table split on the vocabulary (owned by the
  // source embedding), scaled by sqrt(d) plus the sinusoidal position signal and dropout.
  static std::pair<int, int> embed(OpGraph& g, const std::string& p, std::int64_t tokens,
                                   std::int64_t vocab, std::int64_t h, int tied_to) {
    OpNode e = embedding_lookup(p + "embedding", tokens, vocab, h);
    e.split.model = SplitDim::K;
    e.params_split_by_model = true;
    if (tied_to >= 0) {
      e.params = 0;
      e.tied_to = tied_to;
    }
    const int ev = g.add(std::move(e));
    const int sv =
        g.add(vector_op(OpKind::Elementwise, p + "scale_position", static_cast<double>(tokens) * h,
                        1, 2 + vpu_ops::kDropout, 1 + vpu_ops::kDropout),
              {ev});
    return {ev, sv};
  }

  static Encoded encode(const Config& cfg, std::int64_t batch, std::int64_t seq) {
    const std::int64_t enc_layers = kTransformerBigEncoderLayers(cfg);
    const std::int64_t vocab = kTransformerBigVocab(cfg);
    Encoded out;
    out.dims = {batch, kTransformerBigHidden(cfg), kTransformerBigHeads(cfg),
                kTransformerBigFfn(cfg)};
    const TransformerDims& d = out.dims;
    if (d.hidden % d.heads != 0)
      throw ConfigError("workload.heads", std::to_string(d.heads) +
                                              " heads do not divide workload.hidden = " +
                                              std::to_string(d.hidden) + "; use a divisor of it");
    OpGraph& g = out.graph;
    g.model = kTransformerBigModel;
    g.replica_batch = batch;
    require_transformer_splits(g, d);
    g.require_divisible(
        {"model", "workload.vocab", vocab, "shared vocabulary (embedding and softmax)"});
    auto [table, x] = embed(g, "encoder.", batch * seq, vocab, d.hidden, -1);
    for (std::int64_t l = 0; l < enc_layers; ++l) {
      const std::string p = "encoder." + std::to_string(l) + ".";
      g.begin_layer();
      x = add_self_attention(g, p, x, seq, d);
      x = add_feed_forward(g, p, x, seq, d, Activation::Relu);
      g.end_layer();
    }
    out.table = table;
    out.memory = x;
    return out;
  }
};

// 2048: the largest MLPerf v0.7 run (reference table).
const ModelRegistrar kTransformerBigRegister{
    {kTransformerBigModel, 2048,
     "packed 256-token sentence pairs per training step over all replicas"},
    [] { return std::make_unique<TransformerBig>(); }};

}  // namespace
}  // namespace tpusim
