// 2D weight-stationary sharding (parallelism.model2) and the sequence axis (parallelism.sequence,
// parallelism.sequence_attention), docs/llm.md: every collective's bytes and axes from the
// dimensions, the memory per core, the model FLOPs, and the errors.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "model_study.hpp"

using namespace tpusim;
using tpusim::test::index_of;
using tpusim::test::op_named;
using tpusim::test::program_of;

namespace {
// A small decoder without biases: d_model 256, 4 heads of 64, d_ff 1024, vocabulary 1024,
// sequences of 128 tokens, serial GELU layers, learned positions. 2x2 chips of 2 cores: 8 cores.
constexpr double kD = 256, kF = 1024, kS = 128, kHeads = 4, kHd = 64;

Config lm_config(const nlohmann::json& par, int layers, long long batch,
                 const std::string& remat = "none",
                 const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json w{{"model", "decoder_lm"}, {"global_batch", batch}, {"layers", layers},
                   {"d_model", kD},         {"heads", kHeads},       {"d_ff", kF},
                   {"vocab", 1024},         {"seq_len", kS},         {"biases", false},
                   {"remat", remat}};
  w.update(extra);
  return load_config({{"topology", "2x2"}, {"workload", w}, {"parallelism", par}});
}

Program lm(const nlohmann::json& par, int layers = 1, long long batch = 4,
           const std::string& remat = "none") {
  return program_of(lm_config(par, layers, batch, remat));
}

// Bytes of the collectives of `kind` over exactly `axes` whose name starts with `prefix`.
double bytes_over(const Program& p, CollectiveKind kind, const std::vector<std::string>& axes,
                  const std::string& prefix) {
  double s = 0;
  for (const auto& op : p.ops)
    if (op.is_collective && op.collective.kind == kind && op.collective.axes == axes &&
        op.name.rfind(prefix, 0) == 0)
      s += op.collective.bytes;
  return s;
}

int count_over(const Program& p, CollectiveKind kind, const std::vector<std::string>& axes) {
  int n = 0;
  for (const auto& op : p.ops)
    if (op.is_collective && op.collective.kind == kind && op.collective.axes == axes) ++n;
  return n;
}

double resident_weights(const Program& p) {
  double s = 0;
  for (const auto& r : p.resident)
    if (r.cls != MemoryClass::Infeed) s += r.bytes;
  return s;
}

const std::vector<std::string> kModel{"model"}, kModel2{"model2"}, kSeq{"sequence"};
const std::string kMlp = "decoder.0.mlp.";
}  // namespace

TEST_CASE(
    "2D weight-stationary sharding: per matmul an all-gather over one model axis, a "
    "reduce-scatter of the partial sums over the other") {
  // model 2 x model2 2 (x data 2): 2 sequences per replica, T = 256 tokens.
  const double m = 2, m2 = 2, T = 2 * kS;
  const Program p = lm({{"model", m}, {"model2", m2}, {"shard_activations", true}});
  // A: the residual stream gathered over model, [T, d_model / model2]; B: the MLP's inner
  // activation gathered over model2, [T, d_ff / model]; both bf16.
  const double A = T * kD / m2 * 2, B = T * kF / m * 2;
  // mlp.in ([d_model / model2, d_ff / model] per core): X gathered over model, partial sums
  // reduce-scattered over model2 (1/model2 of them kept).
  const Op& in = op_named(p, kMlp + "in");
  REQUIRE(in.compute.matmul);
  CHECK(in.compute.matmul->m == T);
  CHECK(in.compute.matmul->k == kD / m2);
  CHECK(in.compute.matmul->n == kF / m);
  const Op& in_gather = op_named(p, kMlp + "in.input.all-gather");
  CHECK(in_gather.collective.axes == kModel);
  CHECK(in_gather.collective.bytes == A);
  const Op& in_rs = op_named(p, kMlp + "in.reduce-scatter");
  CHECK(in_rs.collective.axes == kModel2);
  CHECK(in_rs.collective.bytes == B);
  CHECK(in_rs.output.bytes == B / m2);
  // mlp.out ([d_ff / model, d_model / model2]): the mirror image.
  const Op& out = op_named(p, kMlp + "out");
  CHECK(out.compute.matmul->k == kF / m);
  CHECK(out.compute.matmul->n == kD / m2);
  const Op& out_gather = op_named(p, kMlp + "out.input.all-gather");
  CHECK(out_gather.collective.axes == kModel2);
  CHECK(out_gather.collective.bytes == B);
  const Op& out_rs = op_named(p, kMlp + "out.reduce-scatter");
  CHECK(out_rs.collective.axes == kModel);
  CHECK(out_rs.collective.bytes == A);
  CHECK(out_rs.output.bytes == A / m);
  // Backward, per matmul: dY gathered over the axis its forward reduce-scattered, dX
  // reduce-scattered over the one its forward gathered, X gathered again for dW. Over the MLP:
  // model 3 gathers of A (forward in, dY of out, X of in) and 2 reduce-scatters (forward out,
  // dX of in); model2 the same with B.
  CHECK(bytes_over(p, CollectiveKind::AllGather, kModel, kMlp) == 3 * A);
  CHECK(bytes_over(p, CollectiveKind::ReduceScatter, kModel, kMlp) == 2 * A);
  CHECK(bytes_over(p, CollectiveKind::AllGather, kModel2, kMlp) == 3 * B);
  CHECK(bytes_over(p, CollectiveKind::ReduceScatter, kModel2, kMlp) == 2 * B);
  // The attention: Q/K/V like mlp.in (3 d_model columns of heads), attention_out like mlp.out;
  // the scores, softmax and context split the heads over model and the sequences over model2.
  const double qkv = T * 3 * kHeads * kHd / m * 2;
  CHECK(op_named(p, "decoder.0.attention.qkv.reduce-scatter").collective.bytes == qkv);
  CHECK(op_named(p, "decoder.0.attention.attention_out.input.all-gather").collective.bytes ==
        T * kHeads * kHd / m * 2);
  CHECK(op_named(p, "decoder.0.attention.scores").compute.matmul->batch == 2 * kHeads / (m * m2));
  // The layer norms' per-token statistics (2 f32 per token of the core's T / model rows) are
  // summed over model2 before the normalisation, forward and backward.
  for (const char* ln : {"layer_norm.stats.all-reduce", "layer_norm.bwd.stats.all-reduce"}) {
    const Op& stats = op_named(p, kMlp + ln);
    CHECK(stats.collective.axes == kModel2);
    CHECK(stats.collective.bytes == T / m * 2 * 4);
  }
  CHECK(bytes_over(p, CollectiveKind::AllReduce, kModel2, kMlp) == 2 * (T / m * 2 * 4));
  // Weights are split on both sides: mlp.in's gradient is d_model x d_ff / (model x model2).
  CHECK(op_named(p, kMlp + "in.bwd_weight").output.bytes == kD * kF / (m * m2) * 4);
}

TEST_CASE("2D sharding: memory per core falls by model2, model FLOPs unchanged") {
  const Program one = lm({{"model", 2}, {"shard_activations", true}});
  const Program two = lm({{"model", 2}, {"model2", 2}, {"shard_activations", true}});
  // Every weight (matrices, embedding, layer-norm scales, the position table) is split on its
  // d_model side over model2: master weights, Adam slots and bf16 copies are half.
  CHECK(resident_weights(two) == Approx(resident_weights(one) / 2).epsilon(1e-12));
  // The residual stream of a replica (T tokens x d_model) is 1/(model x model2) per core: a
  // replica of model 2 x model2 2 holds 2 sequences, one of model 2 holds 1.
  CHECK(op_named(two, "decoder.0.mlp.residual").output.bytes == 2 * kS * kD * 2 / 4);
  CHECK(op_named(one, "decoder.0.mlp.residual").output.bytes == kS * kD * 2 / 2);
  // MFU's numerator: the same global batch's forward and backward whatever the layout.
  const Program plain = lm({{"model", 4}});
  for (const Program* q : {&one, &two})
    CHECK(q->model_flops == Approx(plain.model_flops).epsilon(1e-12));
}

TEST_CASE("sequence axis: K and V gathered over the sequence, dK and dV reduce-scattered") {
  // model 2 x sequence 2 (x data 2): one sequence per replica, 64 of its tokens per core.
  const double m = 2, sp = 2;
  const Program p = lm({{"model", m}, {"sequence", sp}}, 1, 2);
  // K (and V) of the whole sequence for the core's 2 heads: 1 x 4 heads / model x 128 x 64, bf16.
  const double kv = kHeads / m * kS * kHd * 2;
  const Op& k = op_named(p, "decoder.0.attention.scores.k.all-gather");
  const Op& v = op_named(p, "decoder.0.attention.context.v.all-gather");
  for (const Op* g : {&k, &v}) {
    CHECK(g->collective.axes == kSeq);
    CHECK(g->collective.bytes == kv);
  }
  // The scores: the core's queries against every key (causal attention charged as XLA computes
  // it, the full s x s masked, so the whole K and V are gathered).
  const Op& scores = op_named(p, "decoder.0.attention.scores");
  CHECK(scores.compute.matmul->m == kS / sp);
  CHECK(scores.compute.matmul->n == kS);
  // Backward: the gradients of the gathered K and V are partial over the sequence (each core's
  // queries), reduce-scattered back: 1/sequence kept. The backward reads the forward's gathers.
  for (const char* name : {"scores", "context"}) {
    const Op& rs =
        op_named(p, std::string("decoder.0.attention.") + name + ".bwd_input_b.reduce-scatter");
    CHECK(rs.collective.axes == kSeq);
    CHECK(rs.collective.bytes == kv);
    CHECK(rs.output.bytes == kv / sp);
  }
  CHECK(count_over(p, CollectiveKind::AllGather, kSeq) == 2);
  CHECK(count_over(p, CollectiveKind::ReduceScatter, kSeq) == 2);
  CHECK(p.ops[index_of(p, "decoder.0.attention.scores.bwd_input")].deps.end() !=
        std::find(p.ops[index_of(p, "decoder.0.attention.scores.bwd_input")].deps.begin(),
                  p.ops[index_of(p, "decoder.0.attention.scores.bwd_input")].deps.end(),
                  index_of(p, "decoder.0.attention.scores.k.all-gather")));
  // Under full remat the recomputed forward gathers K and V again.
  const Program full = lm({{"model", m}, {"sequence", sp}}, 1, 2, "full");
  CHECK(count_over(full, CollectiveKind::AllGather, kSeq) == 4);
  // The matmuls' tokens are split: mlp.in runs 64 rows per core.
  CHECK(op_named(p, kMlp + "in").compute.matmul->m == kS / sp);
  // Weights are replicated over the sequence: their gradients are summed over it like data.
  bool synced = false;
  for (const auto& op : p.ops)
    if (op.name.rfind("grad.bucket.", 0) == 0)
      synced = synced || op.collective.axes == std::vector<std::string>{"data", "sequence"};
  CHECK(synced);
  CHECK(p.model_flops == Approx(lm({{"model", 4}}, 1, 2).model_flops).epsilon(1e-12));
}

TEST_CASE(
    "flash attention over a sequence axis: K and V gathered, 1/sequence of the causal blocks, dK "
    "and dV reduce-scattered") {
  // MaxText's context parallelism: model 2 x sequence 2 (x data 2), one sequence of 1024 tokens
  // per replica in flash blocks of 128: nb = 8 blocks a side, nb (nb + 1) / 2 = 36 on or below
  // the diagonal. Load-balanced (each core 2 of the 2 x sequence chunks, i and 3 - i), each core
  // runs exactly 36 / sequence of them against the gathered K and V.
  const double m = 2, sp = 2, s = 1024, block = 128, nb = s / block, blocks = nb * (nb + 1) / 2;
  const nlohmann::json flash{{"attention", "flash"}, {"seq_len", s}, {"flash_block", block}};
  const nlohmann::json par{{"model", m}, {"sequence", sp}};
  const Program p = program_of(lm_config(par, 1, 2, "none", flash));
  const std::string a = "decoder.0.attention.flash_attention";
  // K and V of the whole sequence for the core's 2 heads, bf16, each gathered over "sequence".
  const double kv = kHeads / m * s * kHd * 2;
  for (const char* name : {".k.all-gather", ".v.all-gather"}) {
    const Op& g = op_named(p, a + name);
    CHECK(g.collective.axes == kSeq);
    CHECK(g.collective.bytes == kv);
  }
  // The forward: per core 2 block products (scores, context) of each of its heads' blocks.
  const Op& f = op_named(p, a);
  CHECK(f.compute.matmul->batch == 2 * (kHeads / m) * blocks / sp);
  CHECK(f.compute.matmul->m == block);
  CHECK(f.compute.matmul->n == block);
  const double square = 4 * kHeads * s * s * kHd;  // scores and context, whole, one sequence
  CHECK(f.compute.matmul->flops() == Approx(square / (m * sp) * (nb + 1) / (2 * nb)));
  // The backward reads the forward's kept gathers (none again), its five block products per
  // block, and reduce-scatters dK and dV (partial over every core's queries) back: 1/sequence
  // kept. dQ stays local.
  const Op& b = op_named(p, a + ".bwd");
  CHECK(b.compute.matmul->flops() == Approx(2.5 * f.compute.matmul->flops()));
  const Op& rs = op_named(p, a + ".bwd.reduce-scatter");
  CHECK(rs.collective.axes == kSeq);
  CHECK(rs.collective.bytes == 2 * kv);
  CHECK(rs.output.bytes == 2 * kv / sp);
  CHECK(count_over(p, CollectiveKind::AllGather, kSeq) == 2);
  CHECK(count_over(p, CollectiveKind::ReduceScatter, kSeq) == 1);
  const auto& deps = p.ops[index_of(p, a + ".bwd")].deps;
  CHECK(std::find(deps.begin(), deps.end(), index_of(p, a + ".k.all-gather")) != deps.end());
  // Memory: the gathered K and V stay live (activations) until the backward reads them.
  CHECK(p.ops[index_of(p, a + ".k.all-gather")].output.last_use >= index_of(p, a + ".bwd"));
  // Under full remat the recomputed forward gathers them again.
  const Program full = program_of(lm_config(par, 1, 2, "full", flash));
  CHECK(count_over(full, CollectiveKind::AllGather, kSeq) == 4);
  CHECK(count_over(full, CollectiveKind::ReduceScatter, kSeq) == 1);
  // All-to-all resharding: no gathers, each core its heads' blocks whole.
  nlohmann::json a2a = par;
  a2a["sequence_attention"] = "all_to_all";
  const Program h = program_of(lm_config(a2a, 1, 2, "none", flash));
  CHECK(count_over(h, CollectiveKind::AllGather, kSeq) == 0);
  CHECK(op_named(h, a).compute.matmul->batch == 2 * (kHeads / m) * blocks / sp);
  // The model FLOPs are any layout's.
  CHECK(p.model_flops ==
        Approx(program_of(lm_config({{"model", 4}}, 1, 2, "none", flash)).model_flops)
            .epsilon(1e-12));
}

TEST_CASE("sequence axis with all-to-all resharding: Q, K, V to heads and the context back") {
  const double m = 2, sp = 2, T = kS;
  const Program p =
      lm({{"model", m}, {"sequence", sp}, {"sequence_attention", "all_to_all"}}, 1, 2);
  // Each all-to-all carries the core's shard: T / sequence tokens x its heads' columns, bf16.
  const double qkv = T * 3 * kHeads * kHd * 2 / (m * sp), ctx = T * kHeads * kHd * 2 / (m * sp);
  for (const auto& [name, bytes] :
       {std::pair{"to_heads", qkv}, std::pair{"to_sequence", ctx}, std::pair{"to_heads.bwd", qkv},
        std::pair{"to_sequence.bwd", ctx}}) {
    const Op& a = op_named(p, std::string("decoder.0.attention.") + name + ".all-to-all");
    CHECK(a.collective.kind == CollectiveKind::AllToAll);
    CHECK(a.collective.axes == kSeq);
    CHECK(a.collective.bytes == bytes);
  }
  CHECK(count_over(p, CollectiveKind::AllGather, kSeq) == 0);
  // The attention runs the whole sequence for 1 of the 4 heads per core.
  const Op& scores = op_named(p, "decoder.0.attention.scores");
  CHECK(scores.compute.matmul->batch == kHeads / (m * sp));
  CHECK(scores.compute.matmul->m == kS);
  CHECK(p.model_flops == Approx(lm({{"model", 4}}, 1, 2).model_flops).epsilon(1e-12));
}

TEST_CASE("a 2D or sequence degree that does not divide its dimension names its path") {
  auto problem_path = [](const nlohmann::json& par, long long batch = 4,
                         const nlohmann::json& extra = nlohmann::json::object()) -> std::string {
    try {
      program_of(lm_config(par, 1, batch, "none", extra));
    } catch (const ConfigError& e) {
      REQUIRE(e.problems().size() == 1);
      return e.problems().front().where;
    }
    return "";
  };
  // model2 without sharded activations; a batch of 1 sequence per replica split over model2 2.
  CHECK(problem_path({{"model", 2}, {"model2", 2}}) == "parallelism.model2");
  CHECK(problem_path({{"model", 2}, {"model2", 2}, {"shard_activations", true}}, 2) ==
        "parallelism.model2");
  // 4 heads over model 2 leave 2 per core; all-to-all over sequence 4 cannot split them.
  CHECK(problem_path({{"model", 2}, {"sequence", 4}, {"sequence_attention", "all_to_all"}}, 1) ==
        "parallelism.sequence");
  // A degree that does not divide the dimension it splits: d_model 260 over model2 8, 100
  // tokens over sequence 8.
  CHECK(problem_path({{"model2", 8}, {"shard_activations", true}}, 8, {{"d_model", 260}}) ==
        "parallelism.model2");
  CHECK(problem_path({{"sequence", 8}}, 1, {{"seq_len", 100}}) == "parallelism.sequence");
}
