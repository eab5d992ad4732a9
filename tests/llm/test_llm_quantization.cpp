// Quantized training (workload.quantization, docs/llm.md): which matmuls run in 8 bits, their
// quantize and rescale vector work, the weights stored and FSDP-gathered in int8, and the errors,
// against closed forms of the decoder's dimensions.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "tests/unit/model_study.hpp"

using namespace tpusim;
using tpusim::test::op_named;
using tpusim::test::program_of;

namespace {
// d_model 256, 4 heads, d_ff 1024, 128 tokens, 2 layers, GELU, no biases.
constexpr double kD = 256, kF = 1024, kS = 128;

Config quant_study(const std::string& preset, const std::string& q, nlohmann::json par = {}) {
  nlohmann::json w{{"model", "decoder_lm"}, {"global_batch", 8}, {"layers", 2},
                   {"d_model", kD},         {"heads", 4},        {"d_ff", kF},
                   {"vocab", 1024},         {"seq_len", kS},     {"biases", false},
                   {"quantization", q}};
  // 4 chips: a 3D cube's corner on v5p and v7, a 2D square on v3 and v5e.
  const bool cube = preset == "tpu_v5p" || preset == "tpu_v7";
  nlohmann::json doc{{"preset", preset}, {"topology", cube ? "2x2x1" : "2x2"}, {"workload", w}};
  if (par.is_object()) doc["parallelism"] = par;
  return load_config(doc);
}

double gather_bytes(const Program& p, const std::string& name) {
  return op_named(p, name).collective.bytes;
}
}  // namespace

TEST_CASE("int8 training: the layer matmuls and both their gradients run in int8, the rest bf16") {
  const Program p = program_of(quant_study("tpu_v5p", "int8"));
  for (const char* name : {"decoder.0.attention.qkv", "decoder.0.attention.attention_out",
                           "decoder.1.mlp.in", "decoder.1.mlp.out"}) {
    INFO(name);
    const std::string n = name;
    CHECK(op_named(p, n).compute.mxu_dtype == DType::I8);
    CHECK(op_named(p, n + ".bwd_weight").compute.mxu_dtype == DType::I8);
  }
  CHECK(op_named(p, "decoder.1.mlp.out.bwd_input").compute.mxu_dtype == DType::I8);
  // MaxText's AQT leaves the attention einsums and the logits in bf16.
  for (const char* name : {"decoder.0.attention.scores", "decoder.0.attention.context",
                           "head.logits", "head.logits.bwd_input"}) {
    INFO(name);
    CHECK(op_named(p, name).compute.mxu_dtype == DType::BF16);
  }
  const Program f = program_of(quant_study("tpu_v7", "fp8"));
  CHECK(op_named(f, "decoder.0.mlp.in.bwd_input").compute.mxu_dtype == DType::F8);
}

TEST_CASE("a quantized matmul adds a quantize pass of both operands and a rescale of its output") {
  // Per core (megacore v5p, 4 devices, data 4): 2 sequences of 128 tokens. mlp.in is
  // [256 tokens, 256] x [256, 1024]: 4 vector ops per operand element, 2 per output element.
  const Program b = program_of(quant_study("tpu_v5p", "none"));
  const Program q = program_of(quant_study("tpu_v5p", "int8"));
  const auto vector_ops = [](const Op& op) {
    return op.compute.vpu_elements * op.compute.vpu_ops_per_element;
  };
  const double m = 2 * kS, k = kD, n = kF;
  const Op& in_b = op_named(b, "decoder.0.mlp.in");
  const Op& in_q = op_named(q, "decoder.0.mlp.in");
  REQUIRE(in_q.compute.matmul->m == m);
  CHECK(vector_ops(in_q) - vector_ops(in_b) == Approx(4 * (m * k + k * n) + 2 * m * n));
  CHECK(in_q.compute.flops == in_b.compute.flops);  // MFU counts the same model FLOPs
  CHECK(q.model_flops == b.model_flops);
}

TEST_CASE("int8 weights: their copies and FSDP all-gathers take one byte per weight") {
  // fsdp 4: one all-gather per layer of its weights. Per layer, matmul weights 4 d^2 + 2 d f
  // (int8 when quantized), two layer-norm scales of d (bf16 either way).
  const nlohmann::json fsdp{{"fsdp", 4}};
  const Program b = program_of(quant_study("tpu_v5p", "none", fsdp));
  const Program q = program_of(quant_study("tpu_v5p", "int8", fsdp));
  const double matmuls = 4 * kD * kD + 2 * kD * kF, norms = 2 * kD;
  const std::string g = "decoder.1.attention.layer_norm.weights.all-gather";
  CHECK(gather_bytes(b, g) == Approx(2 * (matmuls + norms)));
  CHECK(gather_bytes(q, g) == Approx(1 * matmuls + 2 * norms));
  double copies_b = 0, copies_q = 0;
  for (const auto& r : b.resident)
    if (r.cls == MemoryClass::WeightCopies) copies_b += r.bytes;
  for (const auto& r : q.resident)
    if (r.cls == MemoryClass::WeightCopies) copies_q += r.bytes;
  // Two layers, each 1/fsdp per core, one byte saved per matmul weight.
  CHECK(copies_b - copies_q == Approx(2 * matmuls / 4));
}

TEST_CASE("quantization errors: a chip without the rate, a value not allowed") {
  // TPU v3 has no int8 figure; v5p's int8 rate is set.
  CHECK_THROWS_WITH(
      program_of(quant_study("tpu_v3", "int8")),
      Catch::Contains("workload.quantization") && Catch::Contains("hardware.mxu.int8_rate"));
  CHECK_THROWS_WITH(program_of(quant_study("tpu_v5e", "fp8")),
                    Catch::Contains("hardware.mxu.fp8_rate"));
  CHECK_THROWS_WITH(quant_study("tpu_v5p", "int4"), Catch::Contains("workload.quantization") &&
                                                        Catch::Contains("int8") &&
                                                        Catch::Contains("fp8"));
}
