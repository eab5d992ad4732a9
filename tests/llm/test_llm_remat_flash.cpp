// MaxText's remat policies (workload.remat) and flash attention (workload.attention = flash),
// docs/llm.md: the bytes each policy keeps per layer, offloading, the blocks flash attention runs
// and the s x s tensors it does not keep, against closed forms of the decoder's dimensions.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "tests/unit/model_study.hpp"

using namespace tpusim;
using tpusim::test::activations_at;
using tpusim::test::index_of;
using tpusim::test::op_named;
using tpusim::test::program_of;

namespace {
// d_model 256, 4 heads of 64, d_ff 1024 (GELU), 128 tokens, 3 layers, one sequence per core
// (TPU v3, 2 cores): bf16 tensors per layer of T = 128 tokens.
constexpr double kRematD = 256, kH = 4, kRematF = 1024, kRematS = 128, kL = 3;

Program lm(nlohmann::json extra, double seq = kRematS) {
  nlohmann::json w{{"model", "decoder_lm"}, {"global_batch", 2}, {"layers", kL},
                   {"d_model", kRematD},    {"heads", kH},       {"d_ff", kRematF},
                   {"vocab", 1024},         {"seq_len", seq}};
  if (extra.is_object()) w.update(extra);
  return program_of(load_config({{"topology", "1x1"}, {"workload", w}}));
}

double kept_at_loss(const Program& p) { return activations_at(p, index_of(p, "head.loss")); }
}  // namespace

TEST_CASE("each MaxText remat policy keeps its checkpoint names' tensors per layer") {
  // Per layer, bf16, one sequence: Q, K, V 3 T d; context T d; out_proj T d; mlpwi T f.
  // `full` keeps only each layer's input, so a policy keeps its names on top of it. mlpwo is
  // saveable but no backward op reads it (only the residual add, whose gradient reads nothing):
  // JAX keeps only the residuals the backward pass reads, so no policy keeps it.
  const double t = kRematS * 2;  // bytes per element row of one feature: T tokens x 2 bytes
  const double qkv = 3 * kRematD * t, context = kRematD * t, out = kRematD * t, wi = kRematF * t;
  const struct {
    const char* policy;
    double per_layer;
  } cases[] = {
      {"minimal", qkv + out + wi},
      {"minimal_with_context", qkv + context + out + wi},
      {"save_dot_with_context_except_mlp", qkv + context + out},
      {"save_dot_except_mlpwi", qkv + out},
      {"save_dot_except_mlp", qkv + out},
      {"save_qkv_proj", qkv},
      {"save_out_proj", out},
      {"save_dot_except_logits_ffn1", qkv + context + out},
      {"save_dot_except_logits", qkv + context + out + wi},
      {"qkv_proj_offloaded", 0},  // saved in host memory
      {"minimal_offloaded", 0},
  };
  const double full = kept_at_loss(lm({{"remat", "full"}}));
  for (const auto& c : cases) {
    INFO(c.policy);
    CHECK(kept_at_loss(lm({{"remat", c.policy}})) - full == Approx(kL * c.per_layer));
  }
}

TEST_CASE("remat policies recompute what they do not keep, offloaded tensors are fetched back") {
  const Program none = lm({{"remat", "none"}}), minimal = lm({{"remat", "minimal"}});
  const Program offloaded = lm({{"remat", "minimal_offloaded"}});
  // minimal recomputes the layer's batched einsums (scores, context) and its vector ops, not the
  // weight matmuls it keeps: 2 x 2 T^2 d FLOPs per layer on the MXU.
  double recomputed = 0;
  for (const auto& op : minimal.ops)
    if (op.name.find(".remat") != std::string::npos) recomputed += op.compute.flops;
  CHECK(recomputed == Approx(kL * 2 * (2 * kRematS * kRematS * kRematD)));
  CHECK_NOTHROW(op_named(minimal, "decoder.1.attention.softmax.remat"));
  // The offloaded tensors come back one layer ahead, one fetch each, writing their bytes into
  // HBM: the last layer's own at the start of its backward, then the next layer's (the model FLOPs
  // are unchanged).
  const Op& fetch = op_named(offloaded, "decoder.2.mlp.in.fetch");
  CHECK(fetch.output.bytes == Approx(kRematF * kRematS * 2));
  const auto at = [&](const char* name) { return index_of(offloaded, name); };
  CHECK(at("decoder.2.mlp.in.fetch") < at("decoder.1.mlp.in.fetch"));
  CHECK(at("decoder.1.mlp.in.fetch") < at("decoder.2.mlp.out.bwd_weight"));
  CHECK(at("decoder.0.mlp.in.fetch") > at("decoder.2.mlp.out.bwd_weight"));
  CHECK(at("decoder.0.mlp.in.fetch") < at("decoder.1.mlp.out.bwd_weight"));
  CHECK(minimal.model_flops == none.model_flops);
  CHECK(offloaded.model_flops == none.model_flops);
  CHECK(kept_at_loss(offloaded) < kept_at_loss(minimal));
}

TEST_CASE(
    "causal flash attention runs the blocks on and below the diagonal: half at long sequences") {
  // 8192 tokens in blocks of 512: nb = 16 blocks a side, nb (nb + 1) / 2 of nb^2 computed.
  const double s = 8192, nb = 16;
  const Program flash = lm({{"attention", "flash"}, {"layers", 1}}, s);
  const Op& f = op_named(flash, "decoder.0.attention.flash_attention");
  const double square = 4 * kH * s * s * (kRematD / kH);  // scores and context, whole
  CHECK(f.compute.matmul->flops() == Approx(square * (nb + 1) / (2 * nb)));
  CHECK(f.compute.matmul->flops() / square < 0.54);
  CHECK(f.compute.flops == Approx(square));  // MFU counts the square, as MaxText's tables
  // Backward: the scores recomputed and four gradient products per block.
  const Op& b = op_named(flash, "decoder.0.attention.flash_attention.bwd");
  CHECK(b.compute.matmul->flops() == Approx(2.5 * f.compute.matmul->flops()));
}

TEST_CASE("flash attention keeps no s x s tensor for the backward pass") {
  // Per layer, one sequence: dot_product keeps the probabilities (h s^2 bf16; the scores are
  // freed after the softmax, whose gradient reads only its output); flash keeps the output's f32
  // log-sum-exp (h s) instead.
  const double dot = kept_at_loss(lm({})), flash = kept_at_loss(lm({{"attention", "flash"}}));
  CHECK(dot - flash == Approx(kL * (2 * kH * kRematS * kRematS - 4 * kH * kRematS)));
  CHECK(lm({{"attention", "flash"}}).model_flops == lm({}).model_flops);
}

TEST_CASE("a remat policy, attention kernel or block not allowed is one error naming the path") {
  CHECK_THROWS_WITH(lm({{"remat", "dots"}}), Catch::Contains("workload.remat") &&
                                                 Catch::Contains("minimal_offloaded") &&
                                                 Catch::Contains("save_dot_except_logits"));
  CHECK_THROWS_WITH(lm({{"attention", "splash"}}),
                    Catch::Contains("workload.attention") && Catch::Contains("flash"));
  CHECK_THROWS_WITH(lm({{"attention", "flash"}, {"flash_block", 200}}),
                    Catch::Contains("workload.flash_block"));
}

TEST_CASE("MaxText's remat names reach the latent attention's and the experts' matmuls") {
  // DeepSeek-style layers (docs/experts.md): the latent attention's q_b (query_proj), kv_b
  // (kv_proj), context and attention_out (out_proj), and the experts' grouped matmuls (mlpwi,
  // mlpwo) carry MaxText's checkpoint names. Per layer, bf16, one sequence of T tokens:
  // query_proj H (nope + rope) features, kv_proj H (nope + v), context H v, out_proj d_model.
  constexpr double kNope = 32, kRope = 16, kV = 32, kExpertFf = 256, kTopK = 2;
  const nlohmann::json mla{{"attention_type", "mla"},   {"q_lora_rank", 64},
                           {"kv_lora_rank", 32},        {"qk_nope_head_dim", kNope},
                           {"qk_rope_head_dim", kRope}, {"v_head_dim", kV},
                           {"positions", "rotary"}};
  auto kept = [](nlohmann::json w, const char* policy) {
    w["remat"] = policy;
    return kept_at_loss(lm(w));
  };
  const double t = kRematS * 2;
  const double qkv = kH * (kNope + kRope) * t + kH * (kNope + kV) * t, context = kH * kV * t,
               out = kRematD * t, wi = kRematF * t;
  const double full = kept(mla, "full");
  CHECK(kept(mla, "save_qkv_proj") - full == Approx(kL * qkv));
  CHECK(kept(mla, "save_out_proj") - full == Approx(kL * out));
  CHECK(kept(mla, "minimal") - full == Approx(kL * (qkv + out + wi)));
  CHECK(kept(mla, "minimal_with_context") - full == Approx(kL * (qkv + context + out + wi)));
  // Routed experts, dropless, uniform routing: T k rows through the experts' in (expert_d_ff
  // wide, GELU) and out (d_model wide, read by the combine's gradient) on every layer.
  nlohmann::json moe = mla;
  moe.update({{"experts", 4}, {"experts_per_token", kTopK}, {"expert_d_ff", kExpertFf}});
  CHECK(kept(moe, "minimal") - kept(moe, "save_dot_except_mlp") ==
        Approx(kL * kRematS * kTopK * (kExpertFf + kRematD) * 2));
}
