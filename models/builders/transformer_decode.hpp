#pragma once
// Beam-search decoding as an evaluation program runs it on the device (the Transformer's MLPerf
// BLEU evaluation): after the encoder, `length` decoding steps, each a decoder pass over the
// newest token of every beam against the key/value caches of the tokens so far.
#include <cstdint>

#include "models/builders/transformer_blocks.hpp"
#include "models/op_graph.hpp"

namespace tpusim {

struct BeamSearch {
  TransformerDims dims;         ///< dims.batch = source sentences of the replica
  std::int64_t beam = 4;        ///< beams per sentence
  std::int64_t length = 0;      ///< decoding steps (the maximum output length)
  std::int64_t source_len = 0;  ///< tokens of the encoder memory per sentence
  std::int64_t vocab = 0;       ///< shared vocabulary (embedding and logits)
  std::int64_t decoder_layers = 0;
};

/// Appends the decoding loop, unrolled step by step (each step's collectives are latency-bound
/// and would be misjudged if merged). Per decoder layer, once: the keys and values of the encoder
/// memory for cross-attention (shared by the beams). Per step: embedding of the beams' last
/// tokens (rows of the shared `table`), per layer self-attention over the step's cache length,
/// cross-attention over the memory, feed-forward; the vocabulary projection, log-softmax, the
/// top 2 x beam candidates per sentence over beam x vocabulary, and the reorder of every layer's
/// cache by the surviving beams. Returns the last op.
int add_beam_search(OpGraph& g, int memory, int table, const BeamSearch& b);

}  // namespace tpusim
