// Op graphs of the builders against closed forms of their parameters and FLOPs.
#include <boost/graph/topological_sort.hpp>
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "model_study.hpp"
#include "models/op_graph.hpp"

using namespace tpusim;
using tpusim::test::graph_of;
using tpusim::test::model_study;

namespace {
// BERT-Large dimensions (the declared defaults).
constexpr double h = 1024, a = 16, f = 4096, s = 512, V = 30522, P = 76, L = 24;

double bert_params() {
  const double embeddings = V * h + (s + 2) * h + 2 * h;
  const double layer =
      (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * f + f) + (f * h + h) + 2 * h;
  const double mlm = (h * h + h) + 2 * h + V;
  const double nsp = (h * h + h) + (2 * h + 2);
  return embeddings + L * layer + mlm + nsp;
}

// Forward FLOPs of one sequence: 2 x tokens x matmul weights, attention scores and context
// (2 s^2 h each per layer), the MLM head on the masked positions, the NSP head on one token.
double bert_forward_flops_per_sequence() {
  const double encoder_weights = 3 * h * h + h * h + 2 * h * f;
  const double attention = 2 * (2 * s * s * h);
  const double mlm = 2 * P * h * h + 2 * P * h * V;
  const double nsp = 2 * h * h + 2 * h * 2;
  return L * (2 * s * encoder_weights + attention) + mlm + nsp;
}
}  // namespace

TEST_CASE("BERT-Large owns the parameters of its layers: about 335 M") {
  auto g = graph_of(model_study("bert_large", "4x4", 32), 1);
  CHECK(static_cast<double>(g.total_params()) == bert_params());
  CHECK(g.total_params() == Approx(335e6).epsilon(0.01));
}

TEST_CASE(
    "BERT-Large forward FLOPs match the closed form and training is forward plus two backward "
    "matmuls") {
  for (long long batch : {1LL, 4LL}) {
    auto g = graph_of(model_study("bert_large", "4x4", 32), batch);
    const double fwd = bert_forward_flops_per_sequence() * batch;
    CHECK(g.total_flops(Phase::Forward) == Approx(fwd).epsilon(1e-12));
    // Every matmul input leads back to parameters, so each forward matmul has both gradients.
    CHECK(g.total_flops(Phase::Backward) == Approx(2 * fwd).epsilon(1e-12));
    CHECK(g.total_flops(Phase::Optimizer) == 0);
  }
  auto g = graph_of(model_study("bert_large", "4x4", 32), 1);
  // The reference: about 1.02 TFLOP per 512-token sequence, forward about 0.34 TFLOP.
  CHECK(g.total_flops() == Approx(1.02e12).epsilon(0.02));
  CHECK(g.total_flops(Phase::Forward) == Approx(0.34e12).epsilon(0.02));
}

TEST_CASE("backward is derived op by op: a weight matmul gives an input and a weight gradient") {
  auto g = graph_of(model_study("bert_large", "4x4", 32), 2);
  int fwd_matmuls = 0, weight_grads = 0, input_grads = 0, optimizer_ops = 0;
  for (int v = 0; v < g.size(); ++v) {
    const auto& n = g.node(v);
    if (n.phase == Phase::Forward && n.kind == OpKind::Matmul) ++fwd_matmuls;
    if (n.phase == Phase::Backward && n.kind == OpKind::Matmul)
      (n.weight_grad ? weight_grads : input_grads)++;
    if (n.phase == Phase::Optimizer) ++optimizer_ops;
  }
  // Per layer 4 weight matmuls (qkv, output, ffn in/out) and 2 two-input attention matmuls;
  // heads: MLM transform, decoder (tied), NSP pooler and classifier.
  CHECK(fwd_matmuls == 24 * 6 + 4);
  CHECK(weight_grads == 24 * 4 + 4);
  CHECK(input_grads == 24 * (4 + 2 * 2) + 4);
  // LAMB: an update and an apply op per parameter owner (the tied decoder owns its bias).
  int owners = 0;
  for (int v = 0; v < g.size(); ++v)
    owners += g.node(v).phase == Phase::Forward && g.node(v).params > 0;
  CHECK(optimizer_ops == 2 * owners);

  // The gradient of the qkv weights is [k=h, batch*seq, n=3h] with an f32 result.
  for (int v = 0; v < g.size(); ++v) {
    const auto& n = g.node(v);
    if (n.name != "encoder.0.attention.qkv.bwd_weight") continue;
    REQUIRE(n.matmul);
    CHECK(n.matmul->k == 2 * 512);
    CHECK(n.matmul->m == 1024);
    CHECK(n.matmul->n == 3 * 1024);
    CHECK(n.out_dtype == DType::F32);
    CHECK(n.bytes_written == 1024.0 * 3 * 1024 * 4);
  }
}

TEST_CASE("the op graph is acyclic and vertex order is a topological order") {
  for (const char* model : {"bert_large", "transformer_big"}) {
    auto g = graph_of(model_study(model, "4x4", 32), 1);
    std::vector<int> order;
    boost::topological_sort(g.boost_graph(), std::back_inserter(order));  // throws on a cycle
    CHECK(static_cast<int>(order.size()) == g.size());
    for (int v = 0; v < g.size(); ++v)
      for (int u : g.inputs(v)) CHECK(u < v);
  }
}

TEST_CASE("Transformer big FLOPs and parameters match the closed forms") {
  const double H = 1024, F = 4096, VOC = 33708, S = 256;
  const double enc_layer = 2 * S * (4 * H * H + 2 * H * F) + 2 * (2 * S * S * H);
  const double dec_layer = 2 * S * (8 * H * H + 2 * H * F) + 4 * (2 * S * S * H);
  const double fwd = 6 * enc_layer + 6 * dec_layer + 2 * S * H * VOC;
  auto g = graph_of(model_study("transformer_big", "4x4", 32), 1);
  CHECK(g.total_flops(Phase::Forward) == Approx(fwd).epsilon(1e-12));
  CHECK(g.total_flops() == Approx(3 * fwd).epsilon(1e-12));

  const double enc_params = (4 * H * H + 4 * H) + (2 * H * F + F + H) + 4 * H;
  const double dec_params = (4 * H * H + 4 * H) + (4 * H * H + 4 * H) + (2 * H * F + F + H) + 6 * H;
  CHECK(static_cast<double>(g.total_params()) == VOC * H + 6 * enc_params + 6 * dec_params);
  CHECK(g.total_params() == Approx(211e6).epsilon(0.01));
}

TEST_CASE("builder dimensions are declared parameters that change the graph") {
  auto small = graph_of(
      model_study("bert_large", "4x4", 32, {}, {{"layers", 2}, {"hidden", 256}, {"heads", 4}}), 1);
  auto large = graph_of(model_study("bert_large", "4x4", 32), 1);
  CHECK(small.total_params() < large.total_params() / 10);
  CHECK_THROWS_AS(model_study("bert_large", "4x4", 32, {}, {{"decoder_layers", 2}}), ConfigError);
  CHECK_THROWS_WITH(graph_of(model_study("bert_large", "4x4", 32, {}, {{"heads", 3}}), 1),
                    Catch::Contains("workload.heads"));
}

TEST_CASE(
    "one-hot word embeddings add a forward matmul and its weight gradient but no input gradient") {
  const double tokens = 2 * 512, V = 30522, H = 1024;
  auto gather = graph_of(model_study("bert_large", "4x4", 32), 2);
  auto one_hot =
      graph_of(model_study("bert_large", "4x4", 32, {}, {{"one_hot_embeddings", true}}), 2);
  CHECK(one_hot.total_flops(Phase::Forward) - gather.total_flops(Phase::Forward) ==
        Approx(2 * tokens * V * H));
  CHECK(one_hot.total_flops(Phase::Backward) - gather.total_flops(Phase::Backward) ==
        Approx(2 * tokens * V * H));
  CHECK(one_hot.total_params() == gather.total_params());
}
