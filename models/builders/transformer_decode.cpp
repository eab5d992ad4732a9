#include "models/builders/transformer_decode.hpp"

#include <string>
#include <vector>

#include "models/eval_ops.hpp"
#include "models/ops.hpp"

namespace tpusim {

int add_beam_search(OpGraph& g, int memory, int table, const BeamSearch& b) {
  const std::int64_t h = b.dims.hidden;
  const std::int64_t rows = b.dims.batch * b.beam;  // one query token per beam and step
  TransformerDims beams = b.dims;
  beams.batch = rows;

  // Cross-attention keys and values of the memory, once per layer for all steps.
  std::vector<int> memory_kv;
  for (std::int64_t l = 0; l < b.decoder_layers; ++l) {
    OpNode kv = weight_matmul("decode." + std::to_string(l) + ".memory_kv",
                              b.dims.batch * b.source_len, h, 2 * h, true);
    split_columns(kv);
    memory_kv.push_back(g.add(std::move(kv), {memory}));
  }

  int last = memory;
  for (std::int64_t t = 1; t <= b.length; ++t) {
    const std::string s = "decode.step" + std::to_string(t) + ".";
    OpNode e = embedding_lookup(s + "embedding", rows, b.vocab, h);
    e.params = 0;
    e.tied_to = table;
    e.split.model = SplitDim::K;
    const int ev = g.add(std::move(e), {last});
    int y = g.add(vector_op(OpKind::Elementwise, s + "scale_position",
                            static_cast<double>(rows) * h, 1, 2, 0),
                  {ev});
    for (std::int64_t l = 0; l < b.decoder_layers; ++l) {
      const std::string p = s + std::to_string(l) + ".";
      OpNode qkv = weight_matmul(p + "attention.qkv", rows, h, 3 * h, true);
      split_columns(qkv);
      const int qkv_v = g.add(std::move(qkv), {y});
      y = add_attention(g, p + "attention.", y, qkv_v, qkv_v, 1, t, beams);
      OpNode q = weight_matmul(p + "cross_attention.q", rows, h, h, true);
      split_columns(q);
      const int q_v = g.add(std::move(q), {y});
      y = add_attention(g, p + "cross_attention.", y, q_v, memory_kv[l], 1, b.source_len, beams);
      y = add_feed_forward(g, p, y, 1, beams, Activation::Relu);
    }
    OpNode logits = weight_matmul(s + "logits", rows, h, b.vocab, false);
    logits.params = 0;
    logits.tied_to = table;
    split_columns(logits);
    const int lv = g.add(std::move(logits), {y});
    OpNode lsm = cross_entropy_loss(s + "log_softmax", rows, b.vocab);  // max, exp, sum, log
    lsm.kind = OpKind::Softmax;
    lsm.split.model = SplitDim::K;
    const int lsm_v = g.add(std::move(lsm), {lv});
    const int top = g.add(
        top_k_select(s + "top_k", b.dims.batch, b.beam * b.vocab, 2 * b.beam, true), {lv, lsm_v});
    // Gather of every layer's key and value caches (t tokens so far) by the surviving beams.
    OpNode reorder =
        vector_op(OpKind::Elementwise, s + "cache_reorder",
                  static_cast<double>(b.decoder_layers) * 2 * rows * t * h, 1, vpu_ops::kGather, 0);
    reorder.split.model = SplitDim::N;  // the caches are divided by heads
    last = g.add(std::move(reorder), {top});
  }
  return last;
}

}  // namespace tpusim
