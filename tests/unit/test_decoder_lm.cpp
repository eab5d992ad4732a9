// The decoder-only language model builder (models/builders/decoder_lm.cpp) against closed forms
// of its presets' parameters: parameter counts and training FLOPs per token 6N + 12 L s H Q.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "model_study.hpp"
#include "models/builders/decoder_blocks.hpp"
#include "models/op_graph.hpp"
#include "models/ops.hpp"
#include "models/workload.hpp"
#include "topologies/topology.hpp"

using namespace tpusim;
using tpusim::test::graph_of;
using tpusim::test::node_named;

namespace {

/// A study of the workload preset `preset` on a 2x2 slice, with `extra` workload fields.
Config lm_study(const std::string& preset, nlohmann::json extra = nlohmann::json::object(),
                nlohmann::json parallelism = nlohmann::json::object()) {
  nlohmann::json w{{"preset", preset}, {"global_batch", 8}};
  w.update(extra);
  return load_config({{"topology", "2x2"}, {"workload", w}, {"parallelism", parallelism}});
}

struct Shape {
  double L, d, H, Q, KV, F, V, s;
  bool swiglu, biases, learned, tied, parallel;
};

/// The dimensions as the study resolved them (the preset's numbers).
Shape shape_of(const Config& c) {
  Shape x;
  x.L = c.integer("workload.layers");
  x.d = c.integer("workload.d_model");
  x.H = c.integer("workload.heads");
  x.Q = c.integer("workload.head_dim") ? c.integer("workload.head_dim") : x.d / x.H;
  x.KV = c.integer("workload.kv_heads") ? c.integer("workload.kv_heads") : x.H;
  x.F = c.integer("workload.d_ff");
  x.V = c.integer("workload.vocab");
  x.s = c.integer("workload.seq_len");
  x.swiglu = c.string("workload.mlp") == "swiglu";
  x.biases = c.boolean("workload.biases");
  x.learned = c.string("workload.positions") == "learned";
  x.tied = c.boolean("workload.tied_embeddings");
  x.parallel = c.string("workload.block") == "parallel";
  return x;
}

/// Weights a token's matmuls multiply by: Q, K and V, attention output, the MLP, the output
/// projection.
double matmul_weights(const Shape& x) {
  const double layer =
      x.d * x.H * x.Q + x.d * 2 * x.KV * x.Q + x.H * x.Q * x.d + (x.swiglu ? 3 : 2) * x.d * x.F;
  return x.L * layer + x.V * x.d;
}

/// Every parameter: the matmul weights, their biases, layer norms (one per layer with parallel
/// blocks, else two; and the final one), the embedding table (a second table if untied), the
/// position table.
double all_params(const Shape& x) {
  const double b = x.biases ? 1 : 0, norm = x.biases ? 2 * x.d : x.d;
  const double mlp_width = x.swiglu ? 2 * x.F : x.F;
  const double layer_biases = b * (x.H * x.Q + 2 * x.KV * x.Q + x.d + mlp_width + x.d);
  const double norms = x.L * (x.parallel ? 1 : 2) * norm + norm;
  return matmul_weights(x) + x.L * layer_biases + norms + (x.tied ? 0 : x.V * x.d) +
         (x.learned ? x.s * x.d : 0);
}

}  // namespace

TEST_CASE("decoder_lm training FLOPs per token are 6N + 12 L s H Q for every preset") {
  for (const char* preset :
       {"decoder_1b", "gpt3_175b", "palm_62b", "palm_540b", "gptj_6b", "llama2_7b", "llama2_13b",
        "llama2_70b", "llama3_8b", "llama3_70b", "gemma_7b"}) {
    INFO(preset);
    const Config c = lm_study(preset);
    const Shape x = shape_of(c);
    const OpGraph g = graph_of(c, 1);
    const double per_token = g.total_flops() / x.s;
    const double N = matmul_weights(x);
    CHECK(per_token == Approx(6 * N + 12 * x.L * x.s * x.H * x.Q).epsilon(1e-12));
    CHECK(static_cast<double>(g.total_params()) == Approx(all_params(x)).epsilon(1e-12));
  }
}

TEST_CASE("the presets have the published sizes") {
  auto params = [](const char* p) {
    return static_cast<double>(graph_of(lm_study(p), 1).total_params());
  };
  CHECK(params("gpt3_175b") == Approx(175e9).epsilon(0.01));
  CHECK(params("palm_540b") == Approx(540e9).epsilon(0.01));
  CHECK(params("palm_62b") == Approx(62.5e9).epsilon(0.02));
  CHECK(params("decoder_1b") == Approx(1.1e9).epsilon(0.05));
  // The serving reference's models (docs/serving.md), as their model cards count them.
  CHECK(params("gptj_6b") == Approx(6.05e9).epsilon(0.01));
  CHECK(params("llama2_7b") == Approx(6.74e9).epsilon(0.01));
  CHECK(params("llama2_13b") == Approx(13.02e9).epsilon(0.01));
  CHECK(params("llama2_70b") == Approx(68.98e9).epsilon(0.01));
  CHECK(params("llama3_8b") == Approx(8.03e9).epsilon(0.01));
  CHECK(params("llama3_70b") == Approx(70.55e9).epsilon(0.01));
  CHECK(params("gemma_7b") == Approx(8.54e9).epsilon(0.01));
}

TEST_CASE("PaLM's published 238.3 k tokens/s on 6144 TPU v4 chips is its published 46.2 % MFU") {
  // The paper counts 6 N + 12 L s H Q model FLOPs per token (attention whole, the shared
  // embedding once), as the builder does: under the graph's FLOPs and the v4 preset's peak the
  // two published figures agree, so the PaLM study's MFU reads like the paper's (docs/llm.md,
  // Auditing the PaLM study).
  const Config c = lm_study("palm_540b");
  const double per_token =
      graph_of(c, 1).total_flops() / static_cast<double>(c.integer("workload.seq_len"));
  const Config v4 = load_config({{"preset", "tpu_v4"}});
  const double dim = static_cast<double>(v4.integer("hardware.mxu.dim"));
  const double peak_per_chip = 2 * dim * dim *
                               static_cast<double>(v4.integer("hardware.mxu.count") *
                                                   v4.integer("hardware.cores_per_chip")) *
                               v4.number("hardware.clock_MHz") * 1e6;
  CHECK(238.3e3 * per_token / (6144 * peak_per_chip) == Approx(0.462).margin(0.0005));
}

TEST_CASE("decoder_lm's block, MLP, attention and position choices change the graph") {
  const OpGraph base = graph_of(lm_study("decoder_1b"), 1);
  const Shape x = shape_of(lm_study("decoder_1b"));
  // Multi-query: K and V lose (H - 1) heads of weights.
  const OpGraph mqa = graph_of(lm_study("decoder_1b", {{"kv_heads", 1}}), 1);
  CHECK(base.total_params() - mqa.total_params() ==
        static_cast<std::int64_t>(x.L * (x.d + 1) * 2 * (x.H - 1) * x.Q));
  // SwiGLU adds a third d x F matrix (and F biases) per layer.
  const OpGraph swiglu = graph_of(lm_study("decoder_1b", {{"mlp", "swiglu"}}), 1);
  CHECK(swiglu.total_params() - base.total_params() ==
        static_cast<std::int64_t>(x.L * (x.d * x.F + x.F)));
  // Rotary positions drop the position table; parallel blocks one layer norm per layer.
  const OpGraph rotary = graph_of(lm_study("decoder_1b", {{"positions", "rotary"}}), 1);
  CHECK(base.total_params() - rotary.total_params() == static_cast<std::int64_t>(x.s * x.d));
  const OpGraph parallel = graph_of(lm_study("decoder_1b", {{"block", "parallel"}}), 1);
  CHECK(base.total_params() - parallel.total_params() == static_cast<std::int64_t>(x.L * 2 * x.d));
  CHECK(parallel.total_flops() == Approx(base.total_flops()).epsilon(1e-12));
}

TEST_CASE("decoder_lm refuses heads that do not fit, naming the path") {
  CHECK_THROWS_WITH(graph_of(lm_study("decoder_1b", {{"kv_heads", 3}}), 1),
                    Catch::Contains("workload.kv_heads"));
  CHECK_THROWS_WITH(graph_of(lm_study("decoder_1b", {{"heads", 3}}), 1),
                    Catch::Contains("workload.heads"));
}

TEST_CASE("build_program_of reports a batch problem with the graph's, or alone on first_problem") {
  // A batch of 7 over the 2x2 slice's data replicas, and kv heads that do not divide the heads:
  // the batch is checked before the op graph is built, the heads when it is built.
  const Config c = lm_study("decoder_1b", {{"global_batch", 7}, {"kv_heads", 3}});
  const Topology topology(topology_from_json(c.json().at("topology")));
  const HardwareSpec hw = HardwareSpec::from_config(c);
  auto problems = [&](bool first_problem) {
    try {
      build_program_of(c, topology, hw, ProgramKind::Train, nullptr, first_problem);
    } catch (const ConfigError& e) {
      std::vector<std::string> where;
      for (const Problem& p : e.problems()) where.push_back(p.where);
      return where;
    }
    FAIL("no problem reported");
    return std::vector<std::string>{};
  };
  const auto all = problems(false);
  REQUIRE(all.size() >= 2);
  CHECK(all.front() == "workload.global_batch");
  CHECK(std::find(all.begin(), all.end(), "workload.kv_heads") != all.end());
  CHECK(problems(true) == std::vector<std::string>{"workload.global_batch"});
}

// Mixture-of-experts layers and multi-head latent attention (docs/experts.md).
namespace {

/// Forward parameters of the graph: all of them, and those a token multiplies by (the routed
/// experts' weights counted k / E).
struct Counts {
  double total = 0, active = 0;
};

Counts counts_of(const OpGraph& g, double experts, double top_k) {
  Counts c;
  for (int v = 0; v < g.size(); ++v) {
    const OpNode& n = g.node(v);
    if (n.phase != Phase::Forward) continue;
    c.total += static_cast<double>(n.params);
    c.active += static_cast<double>(n.params) * (n.expert_weights ? top_k / experts : 1);
  }
  return c;
}

/// Weights of one layer's latent attention a token multiplies by (DeepSeek-V3's shapes).
double mla_weights(const Config& c) {
  const double d = c.integer("workload.d_model"), H = c.integer("workload.heads");
  const double rq = c.integer("workload.q_lora_rank"), rkv = c.integer("workload.kv_lora_rank");
  const double nope = c.integer("workload.qk_nope_head_dim");
  const double rope = c.integer("workload.qk_rope_head_dim"), v = c.integer("workload.v_head_dim");
  return d * rq + rq * H * (nope + rope) + d * (rkv + rope) + rkv * H * (nope + v) + H * v * d;
}

}  // namespace

TEST_CASE("the mixture-of-experts presets have the published total and active parameters") {
  struct Published {
    const char* preset;
    double total, active, tolerance;
  };
  // Mixtral: Jiang et al. 2024 (46.7 B / 12.9 B) and Mistral's 8x22B (141 B / 39 B); DeepSeek-V3
  // technical report (671 B / 37 B without the multi-token prediction module).
  for (const Published& p : {Published{"mixtral_8x7b", 46.7e9, 12.9e9, 0.01},
                             Published{"mixtral_8x22b", 141e9, 39e9, 0.01},
                             Published{"deepseek_v3", 671e9, 37e9, 0.02}}) {
    INFO(p.preset);
    const Config c = lm_study(p.preset);
    const Counts n = counts_of(graph_of(c, 1), c.integer("workload.experts"),
                               c.integer("workload.experts_per_token"));
    CHECK(n.total == Approx(p.total).epsilon(p.tolerance));
    CHECK(n.active == Approx(p.active).epsilon(p.tolerance));
  }
}

TEST_CASE("a dropless mixture of experts counts the FLOPs of the top-k experts only") {
  // Mixtral 8x7B, one sequence: per token 6 N_active + 12 L s H Q, N_active the attention, the
  // router, k of the E experts' three matrices and the output projection.
  const Config c = lm_study("mixtral_8x7b");
  const Shape x = shape_of(c);
  const double E = 8, k = 2;
  const OpGraph g = graph_of(c, 1);
  const double attention = x.d * x.H * x.Q + x.d * 2 * x.KV * x.Q + x.H * x.Q * x.d;
  const double active = x.L * (attention + x.d * E + k * 3 * x.d * x.F) + x.V * x.d;
  const double per_token = 6 * active + 12 * x.L * x.s * x.H * x.Q;
  CHECK(g.model_flops() / x.s == Approx(per_token).epsilon(1e-12));
  CHECK(g.total_flops() == Approx(g.model_flops()).epsilon(1e-12));  // nothing padded

  // DeepSeek-V3: latent attention (scores over qk_nope + qk_rope, context over v per head),
  // 3 dense layers, 58 of routed top-8 plus one shared expert.
  const Config v3 = lm_study("deepseek_v3");
  const OpGraph g3 = graph_of(v3, 1);
  const double d = 7168, s = 4096, H = 128, Fe = 2048;
  const double moe = v3.integer("workload.experts") * d + (8 + 1) * 3 * d * Fe;
  const double n3 = 61 * mla_weights(v3) + 3 * 3 * d * 18432 + 58 * moe + 129280 * d;
  CHECK(g3.model_flops() / s ==
        Approx(6 * n3 + 6 * 61 * s * H * ((128 + 64) + 128)).epsilon(1e-12));
}

TEST_CASE("latent attention serving caches the latents and absorbs kv_b when decoding") {
  // A small MLA decoder: 16 heads, kv rank 64, qk 32 + 16 rotary, v 32; 2 sequences with 100
  // cached tokens. The cache holds each token's latent and rotary key (64 + 16 per layer), whole
  // on every model core. Decode expands nothing: the query's non-rotary part goes through kv_b's
  // key half into the latent space, scores and context run against the cached latents (the 16
  // heads as rows of one product per sequence), and kv_b's value half maps the context back.
  const nlohmann::json mla{{"attention_type", "mla"}, {"positions", "rotary"},
                           {"q_lora_rank", 128},      {"kv_lora_rank", 64},
                           {"qk_nope_head_dim", 32},  {"qk_rope_head_dim", 16},
                           {"v_head_dim", 32},        {"layers", 2},
                           {"kv_length", 100}};
  const double B = 2, H = 16, rank = 64, rope = 16, nope = 32, v = 32, ctx = 101;
  auto serving = [&](const char* program, bool decode) {
    nlohmann::json w = mla;
    w["program"] = program;
    const Config c = lm_study("decoder_1b", w, {{"model", 2}});
    return *make_model_builder("decoder_lm")->build_serving(c, 2, decode);
  };
  const OpGraph dec = serving("decode", true);
  const Config train_cfg = lm_study("decoder_1b", mla);
  const OpGraph train = graph_of(train_cfg, 2);
  CHECK(dec.total_params() == train.total_params());  // kv_b's halves, absorbed
  CHECK(node_named(dec, "decoder.0.attention.kv_b") == nullptr);
  const OpNode* qa = node_named(dec, "decoder.0.attention.q_absorb");
  const OpNode* oa = node_named(dec, "decoder.0.attention.out_absorb");
  REQUIRE((qa && oa));
  CHECK(qa->matmul->flops() == Approx(2 * H * B * nope * rank));
  CHECK(oa->matmul->flops() == Approx(2 * H * B * rank * v));
  CHECK(qa->params + oa->params == node_named(train, "decoder.0.attention.kv_b")->params);
  const OpNode* scores = node_named(dec, "decoder.0.attention.scores");
  REQUIRE(scores);
  CHECK(scores->matmul->batch == B);
  CHECK(scores->matmul->m == H);
  CHECK(scores->matmul->k == rank + rope);
  CHECK(scores->matmul->n == ctx);
  // The queries, the new token's latents and the 100 cached ones (bf16).
  CHECK(scores->bytes_read ==
        Approx(2 * (B * H * (rank + rope) + B * (rank + rope) + B * (ctx - 1) * (rank + rope))));
  double kv_cache = 0;
  for (const auto& r : dec.resident_per_core)
    if (r.cls == MemoryClass::KvCache) kv_cache += r.bytes;
  CHECK(kv_cache == Approx(B * 2048 * 2 * (rank + rope) * 2));  // 2 layers, preallocated, bf16
  // Prefill after 100 cached tokens: kv_b expands the cached and the new tokens' latents.
  const OpGraph pre = serving("prefill", false);
  const OpNode* kvb = node_named(pre, "decoder.0.attention.kv_b");
  REQUIRE(kvb);
  CHECK(kvb->matmul->m == B * 2048);
  CHECK(node_named(pre, "decoder.0.attention.scores")->matmul->n == 2048);
}

TEST_CASE("a decode step reads the experts its tokens choose, in the weights' dtype") {
  // Mixtral-shaped (8 experts, top-2), 2 layers, on a TPU v5e preset (an int8 rate). Dropless, a
  // ragged group with no rows loads no weights: T tokens choosing 2 of 8 uniformly leave
  // 0.75^T of the experts untouched, so one token reads 2 of the 8 experts' matrices and 8
  // tokens 1 - 0.75^8 of them. With int8 weights a serving step reads them at one byte and the
  // expert matmuls run at the int8 rate, as the dense ones do; training quantizes them too.
  auto graph = [](long long batch, const char* program, const char* quantization) {
    nlohmann::json w{{"preset", "mixtral_8x7b"},
                     {"global_batch", 8},
                     {"layers", 2},
                     {"program", program},
                     {"quantization", quantization}};
    if (std::string(program) == "decode") w["kv_length"] = 100;
    const Config c = load_config({{"preset", "tpu_v5e"}, {"topology", "2x2"}, {"workload", w}});
    return std::string(program) == "train"
               ? graph_of(c, batch)
               : *make_model_builder("decoder_lm")->build_serving(c, batch, true);
  };
  const double E = 8, d = 4096, F = 14336;
  auto in_bytes = [&](const OpGraph& g) {
    return node_named(g, "decoder.0.moe.experts.in")->bytes_read;
  };
  auto rows_bytes = [&](const OpGraph& g) {
    const MatmulShape& s = *node_named(g, "decoder.0.moe.experts.in")->matmul;
    return 2.0 * s.batch * s.m * s.k;
  };
  const double weights = E * d * 2 * F;  // the gate and up matrices of every expert
  const OpGraph one = graph(1, "decode", "none"), eight = graph(8, "decode", "none");
  CHECK(in_bytes(one) - rows_bytes(one) == Approx(2 * weights * 2 / E));
  CHECK(in_bytes(eight) - rows_bytes(eight) == Approx(2 * weights * (1 - std::pow(0.75, 8))));
  const OpGraph q = graph(1, "decode", "int8");
  const OpNode* in = node_named(q, "decoder.0.moe.experts.in");
  CHECK(in->mxu_dtype == DType::I8);
  CHECK(in->weights_stored_8bit);
  CHECK(in_bytes(q) - rows_bytes(q) == Approx(weights * 2 / E));
  const OpGraph t = graph(8, "train", "int8");
  CHECK(node_named(t, "decoder.0.moe.experts.out")->mxu_dtype == DType::I8);
  CHECK_FALSE(node_named(t, "decoder.0.moe.experts.out")->weights_stored_8bit);
}

TEST_CASE("capacity dispatch pads to the capacity, drops the excess and counts the kept tokens") {
  // Uniform routing with a capacity factor of 1.0 drops nothing; a busiest expert with s times
  // the mean loses (s - 1) x the mean, the others staying under capacity.
  CHECK(moe_dropped_fraction(8, 1.0, 1.0) == 0);
  CHECK(moe_dropped_fraction(8, 1.25, 1.0) == 0);
  CHECK(moe_dropped_fraction(8, 1.0, 2.0) == Approx((2.0 - 1) / 8));
  CHECK(moe_dropped_fraction(8, 1.5, 3.0) == Approx((3.0 - 1.5) / 8));
  // Below 1, every expert overflows: 1 - cf of the tokens are dropped under uniform routing.
  CHECK(moe_dropped_fraction(8, 0.5, 1.0) == Approx(0.5));
  // The busiest device's share: s with one expert per device, 1 with all of them on one.
  CHECK(moe_device_imbalance(8, 1, 1.5) == Approx(1.5));
  CHECK(moe_device_imbalance(8, 8, 1.5) == 1);
  CHECK(moe_device_imbalance(8, 2, 1.5) == Approx((1.5 + (8 - 1.5) / 7) / 2));

  const nlohmann::json small{{"layers", 2}, {"seq_len", 512}};
  nlohmann::json cap = small;
  cap.update({{"moe_dispatch", "capacity"}, {"capacity_factor", 1.5}, {"expert_imbalance", 3.0}});
  const Config c = lm_study("mixtral_8x7b", cap);
  const Config dropless = lm_study("mixtral_8x7b", small);
  const OpGraph g = graph_of(c, 1), base = graph_of(dropless, 1);
  const double T = 512, E = 8, k = 2, d = 4096, F = 14336;
  const double C = 1.5 * T * k / E;  // 192 rows per expert
  const OpNode* in = node_named(g, "decoder.0.moe.experts.in");
  REQUIRE(in);
  CHECK(in->matmul->batch == E);
  CHECK(in->matmul->m == C);
  CHECK(in->flops == Approx(2 * E * C * d * 2 * F));
  // The model counts the kept assignments: 1 - (3 - 1.5) / 8 of T x k.
  CHECK(in->flops * in->model_flops_share ==
        Approx(2 * T * k * (1 - 1.5 / 8) * d * 2 * F).epsilon(1e-12));
  // The one-hot dispatch and combine: [T, E x C] tensors, 2 T E C d FLOPs each, not the model's.
  for (const char* name : {"decoder.0.moe.dispatch_einsum", "decoder.0.moe.combine_einsum"}) {
    const OpNode* e = node_named(g, name);
    REQUIRE(e);
    CHECK(e->flops == Approx(2 * T * E * C * d));
    CHECK(e->model_flops_share == 0);
  }
  const OpNode* mask = node_named(g, "decoder.0.moe.dispatch_mask");
  REQUIRE(mask);
  CHECK(mask->bytes_written == Approx(T * E * C * 2));
  // Model FLOPs: the dropless graph's less the dropped share of the experts' (fwd and bwd).
  const double experts_fwd = 2 * T * k * d * 3 * F;  // per layer
  CHECK(g.model_flops() == Approx(base.model_flops() - 2 * 3 * experts_fwd * (1.5 / 8)));
}

TEST_CASE("mixture-of-experts and latent-attention input errors name their paths") {
  auto refused = [](nlohmann::json w, nlohmann::json p, const char* path) {
    INFO(path);
    if (w.is_null()) w = nlohmann::json::object();
    if (p.is_null()) p = nlohmann::json::object();
    CHECK_THROWS_WITH(graph_of(lm_study("mixtral_8x7b", std::move(w), std::move(p)), 1),
                      Catch::Contains(path));
  };
  refused({{"experts_per_token", 9}}, {}, "workload.experts_per_token");
  refused({{"moe_dispatch", "capacity"}, {"capacity_factor", 0}}, {}, "workload.capacity_factor");
  refused({{"expert_imbalance", 5}}, {}, "workload.expert_imbalance");  // above E / k = 4
  refused({{"first_dense_layers", 33}}, {}, "workload.first_dense_layers");
  refused({{"experts", 0}, {"shared_experts", 1}}, {}, "workload.shared_experts");
  refused({}, {{"sequence", 2}}, "parallelism.sequence");
  refused({{"attention_type", "mla"}}, {}, "workload.kv_heads");
  CHECK_THROWS_WITH(graph_of(lm_study("deepseek_v3", {{"positions", "learned"}}), 1),
                    Catch::Contains("workload.positions"));
  // No flash kernel for the latent attention: refused, not silently run as dot_product.
  CHECK_THROWS_WITH(
      graph_of(lm_study("deepseek_v3", {{"attention", "flash"}}), 1),
      Catch::Contains("workload.attention: flash with workload.attention_type = mla"));
}

TEST_CASE("over an expert axis the dispatch and combine all-to-alls carry each token's k rows") {
  // The layer as an expert axis of degree 4 builds it: per replica, T x k rows of d_model bf16
  // go out before the experts and as many come back after (an all-to-all of B bytes per core
  // sends (e - 1) / e of them off the device, sim/collectives); the backward pass runs both again.
  DecoderDims d;
  d.batch = 1;
  d.seq = 256;
  d.d_model = 512;
  d.heads = 8;
  d.kv_heads = 8;
  d.head_dim = 64;
  d.d_ff = 1024;
  d.swiglu = true;
  d.experts = 8;
  d.experts_per_token = 2;
  d.expert_d_ff = 1024;
  d.expert_degree = 4;
  OpGraph g;
  const int x = g.add(vector_op(OpKind::Elementwise, "x", 256.0 * 512, 1, 1, 1));
  add_moe_experts(g, "", x, d);
  for (const char* name : {"moe.dispatch", "moe.combine"}) {
    const OpNode* a = node_named(g, name);
    REQUIRE(a);
    CHECK(a->all_to_all_axes == std::vector<std::string>{"expert"});
    CHECK(a->bytes_written == 256.0 * 2 * 512 * 2);
  }
  // Without the axis there is nothing to move.
  d.expert_degree = 1;
  OpGraph one;
  add_moe_experts(one, "", one.add(vector_op(OpKind::Elementwise, "x", 256.0 * 512, 1, 1, 1)), d);
  CHECK(node_named(one, "moe.dispatch") == nullptr);
}

TEST_CASE("the expert axis divides the experts and moves each token's k rows by all-to-all") {
  // Mixtral-shaped, 2 layers of 512 tokens, 8 experts top-2, on a 2x2 slice (8 cores) with an
  // expert axis of 4: one sequence per core.
  const nlohmann::json w{{"layers", 2}, {"seq_len", 512}, {"global_batch", 8}};
  const Program p = tpusim::test::program_of(lm_study("mixtral_8x7b", w, {{"expert", 4}}));
  const double rows = 512.0 * 2, d = 4096;
  int all_to_alls = 0;
  for (const Op& op : p.ops) {
    if (!op.is_collective || op.collective.kind != CollectiveKind::AllToAll) continue;
    ++all_to_alls;
    CHECK(op.collective.axes == std::vector<std::string>{"expert"});
    CHECK(op.collective.bytes == Approx(rows * d * 2));
  }
  CHECK(all_to_alls == 2 * 4);  // per layer: dispatch and combine, forward and backward
  // The gradient sync: each member of the expert axis holds other experts, so the routed
  // experts' gradients are summed over "data" only (2 replicas of each expert), in buckets of
  // their own, and every other weight's over "data" and "expert"; bf16 gradients, each core's.
  const OpGraph g = graph_of(lm_study("mixtral_8x7b", w, {{"expert", 4}}), 8);
  double expert_params = 0, other_params = 0;
  for (int v = 0; v < g.size(); ++v) {
    const OpNode& n = g.node(v);
    if (n.phase != Phase::Forward) continue;
    (n.expert_weights ? expert_params : other_params) += static_cast<double>(n.params);
  }
  REQUIRE(expert_params > 0);
  double expert_bytes = 0, other_bytes = 0;
  for (const Op& op : p.ops) {
    if (!op.is_collective || op.name.rfind("grad.bucket.", 0) != 0) continue;
    const bool data_only = op.collective.axes == std::vector<std::string>{"data"};
    if (!data_only) CHECK(op.collective.axes == std::vector<std::string>{"data", "expert"});
    (data_only ? expert_bytes : other_bytes) += op.collective.bytes;
  }
  CHECK(expert_bytes == Approx(expert_params / 4 * 2));
  CHECK(other_bytes == Approx(other_params * 2));
  // The experts' weights are 1/4 per core: the resident weights drop by 3/4 of theirs.
  const Program one = tpusim::test::program_of(lm_study("mixtral_8x7b", w));
  CHECK(p.examples_per_step == one.examples_per_step);
  CHECK(p.model_flops == Approx(one.model_flops).epsilon(1e-12));
  nlohmann::json six = w;
  six["experts"] = 6;
  CHECK_THROWS_WITH(tpusim::test::program_of(lm_study("mixtral_8x7b", six, {{"expert", 4}})),
                    Catch::Contains("parallelism.expert"));
}

TEST_CASE("a batch that pushes an op past the size limits names workload.global_batch") {
  // issue 51: a batch of 1e9 sequences named the op (ops[2] (embed.tokens)), which no study
  // writes. The error names the batch and the largest batch whose ops stay within the limits.
  auto problem = [](long long batch) {
    try {
      tpusim::test::program_of(tpusim::test::model_study("decoder_lm", "2x2", batch));
    } catch (const ConfigError& e) {
      REQUIRE(e.problems().size() == 1);
      return e.problems()[0];
    }
    return Problem{};
  };
  const Problem p = problem(1000000000);
  INFO(p.line());
  CHECK(p.where == "workload.global_batch");
  CHECK_THAT(p.what, Catch::StartsWith("1000000000 examples make op ") &&
                         Catch::Contains("past the limit of 1e+15 bytes (kMaxBytes") &&
                         Catch::Contains("allowed: at most about "));
  // The op's bytes grow linearly with the batch: the largest batch it names passes the limit
  // check (rounded down to a multiple of the 8 replicas), and twice that does not.
  const std::string tail = p.what.substr(p.what.find("at most about ") + 14);
  const long long fit = std::stoll(tail) / 8 * 8;
  REQUIRE(fit > 8);
  CHECK(problem(fit).where.empty());
  CHECK(problem(2 * fit).where == "workload.global_batch");
}
