// Activations sharded over the model axis (parallelism.shard_activations, docs/llm.md): the
// residual stream, layer norms and residual adds divided over "model"; reduce-scatter after a
// row-split matmul and all-gather before a column-split one instead of the all-reduce.
// Expectations from the dimensions.
#include <catch2/catch.hpp>

#include "model_study.hpp"

using namespace tpusim;
using tpusim::test::activations_at;
using tpusim::test::index_of;
using tpusim::test::op_named;
using tpusim::test::program_of;

namespace {
// A small decoder: d_model 256, 4 heads, d_ff 1024, vocabulary 1024, 128 tokens, 2 serial GELU
// layers with biases and learned positions. 2x2 chips of 2 cores: model 4 x data 2, one
// sequence per replica, so T = 128 tokens per replica.
constexpr double d = 256, F = 1024, S = 128, L = 2, m = 4, T = S;

Program lm(bool shard, const std::string& remat) {
  nlohmann::json w{{"model", "decoder_lm"}, {"global_batch", 2}, {"layers", L},
                   {"d_model", d},          {"heads", 4},        {"d_ff", F},
                   {"vocab", 1024},         {"seq_len", S},      {"remat", remat}};
  nlohmann::json par{{"model", m}};
  if (shard) par["shard_activations"] = true;
  return program_of(load_config({{"topology", "2x2"}, {"workload", w}, {"parallelism", par}}));
}

// Bytes of the collectives of `kind` over "model" alone whose name starts with `prefix`.
double model_bytes(const Program& p, CollectiveKind kind, const std::string& prefix = "") {
  double s = 0;
  for (const auto& op : p.ops)
    if (op.is_collective && op.collective.kind == kind &&
        op.collective.axes == std::vector<std::string>{"model"} && op.name.rfind(prefix, 0) == 0)
      s += op.collective.bytes;
  return s;
}

const std::string kLayer = "decoder.0.";
const double kTensor = T * d * 2;  // one token-by-d_model bf16 tensor of a replica
}  // namespace

TEST_CASE(
    "sharded activations: reduce-scatter after a row-split matmul, all-gather before a "
    "column-split one") {
  const Program off = lm(false, "none"), on = lm(true, "none");
  // Forward: the attention output and the MLP's second matmul reduce-scatter their partial sums
  // (the all-reduce's bytes in, 1/m of them out); Q/K/V and the MLP's first matmul gather the
  // residual stream whole first.
  for (const char* mm : {"attention.attention_out", "mlp.out"}) {
    const Op& ar = op_named(off, kLayer + mm + ".all-reduce");
    const Op& rs = op_named(on, kLayer + mm + ".reduce-scatter");
    CHECK(rs.collective.axes == std::vector<std::string>{"model"});
    CHECK(rs.collective.bytes == ar.collective.bytes);
    CHECK(rs.collective.bytes == kTensor);
    CHECK(rs.output.bytes == kTensor / m);
  }
  for (const char* mm : {"attention.qkv", "mlp.in"}) {
    const Op& g = op_named(on, kLayer + mm + ".input.all-gather");
    CHECK(g.collective.axes == std::vector<std::string>{"model"});
    CHECK(g.collective.bytes == kTensor);
    const auto& deps = op_named(on, kLayer + mm).deps;
    CHECK(std::find(deps.begin(), deps.end(), index_of(on, kLayer + mm + ".input.all-gather")) !=
          deps.end());
  }
  // Backward, the mirror image: the column-split matmuls' input gradients reduce-scatter, the
  // row-split ones gather dY (their input and weight gradients share one gather).
  for (const char* mm : {"attention.qkv", "mlp.in"})
    CHECK(op_named(on, kLayer + mm + ".bwd_input.reduce-scatter").collective.bytes == kTensor);
  for (const char* mm : {"attention.attention_out", "mlp.out"})
    CHECK(op_named(on, kLayer + mm + ".bwd_input.input.all-gather").collective.bytes == kTensor);
  // Per layer: off, 4 all-reduces of a tensor (2 forward, 2 backward); on, 4 reduce-scatters and
  // 6 all-gathers (2 forward, 2 of dY, and X again for the 2 weight gradients without remat).
  // A ring all-reduce moves 2 (m-1)/m of its bytes per core, a reduce-scatter or all-gather
  // (m-1)/m: the same traffic but for the two re-gathers.
  CHECK(model_bytes(off, CollectiveKind::AllReduce, kLayer) == 4 * kTensor);
  CHECK(model_bytes(off, CollectiveKind::ReduceScatter) +
            model_bytes(off, CollectiveKind::AllGather) ==
        0);
  CHECK(model_bytes(on, CollectiveKind::ReduceScatter, kLayer) == 4 * kTensor);
  CHECK(model_bytes(on, CollectiveKind::AllGather, kLayer) == 6 * kTensor);
  // What is left all-reduced over model: the layer norms' scale and bias gradients (partial over
  // their rows), f32.
  CHECK(model_bytes(on, CollectiveKind::AllReduce, kLayer) == 2 * (2 * d) * 4);
}

TEST_CASE(
    "sharded activations under full remat: the recomputed forward's gathers serve the "
    "weight gradients, the same bytes as the all-reduces") {
  const Program off = lm(false, "full"), on = lm(true, "full");
  // Per layer, off: 5 all-reduces (forward 2, backward 2, and the recomputed forward's
  // attention output: mlpwo is not recomputed, only the residual add reads it, whose gradient
  // reads nothing); on: 5 reduce-scatters and 6 all-gathers.
  CHECK(model_bytes(off, CollectiveKind::AllReduce, kLayer) == 5 * kTensor);
  CHECK(model_bytes(on, CollectiveKind::ReduceScatter, kLayer) == 5 * kTensor);
  CHECK(model_bytes(on, CollectiveKind::AllGather, kLayer) == 6 * kTensor);
  // The kept layer inputs (and the head's, the embedding's) are 1/m on each model core.
  const std::string out = kLayer + "mlp.residual";
  CHECK(op_named(off, out).output.bytes == kTensor);
  CHECK(op_named(on, out).output.bytes == kTensor / m);
  // At the loss, full remat keeps: the looked-up embeddings, the positions' output (layer 0's
  // input), each layer's output and the head's layer norm output, 5 tensors, each 1/m now.
  const int loss = index_of(off, "head.loss");
  const double drop = activations_at(off, loss) - activations_at(on, index_of(on, "head.loss"));
  CHECK(drop == Approx((L + 3) * kTensor * (1 - 1 / m)));
}

TEST_CASE("sharded activations: the residual stream's vector ops do 1/m of the work") {
  const Program off = lm(false, "none"), on = lm(true, "none");
  for (const char* v : {"attention.layer_norm", "attention.residual", "mlp.layer_norm",
                        "mlp.residual", "mlp.layer_norm.bwd", "mlp.residual.bwd"}) {
    const Op& a = op_named(off, kLayer + v);
    const Op& b = op_named(on, kLayer + v);
    CHECK(a.compute.vpu_elements == T * d);
    CHECK(b.compute.vpu_elements == a.compute.vpu_elements / m);
    CHECK(b.compute.bytes_written == a.compute.bytes_written / m);
  }
  // The matmuls do the same work either way.
  CHECK(op_named(on, kLayer + "mlp.in").compute.flops ==
        op_named(off, kLayer + "mlp.in").compute.flops);
}
