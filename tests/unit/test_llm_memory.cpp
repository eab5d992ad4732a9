// Memory of large-model training (docs/llm.md): selective rematerialisation of attention,
// full rematerialisation, gradient accumulation over microbatches, against closed forms of the
// dimensions. (tests/unit/test_memory_model.cpp holds full remat of a chain of layers.)
#include <catch2/catch.hpp>

#include "model_study.hpp"
#include "models/memory/memory_model.hpp"

using namespace tpusim;
using tpusim::test::activations_at;
using tpusim::test::program_of;
using tpusim::test::sum_flops;

namespace {
// d_model 256, 4 heads, d_ff 1024, vocabulary 1024, 128 tokens, 3 layers; TPU v3 (2 cores).
constexpr double d = 256, h = 4, s = 128, L = 3;

Program lm(long long batch, nlohmann::json extra) {
  nlohmann::json w{
      {"model", "decoder_lm"}, {"global_batch", batch}, {"layers", L}, {"d_model", d}, {"heads", h},
      {"d_ff", 1024},          {"vocab", 1024},         {"seq_len", s}};
  if (extra.is_object()) w.update(extra);
  return program_of(load_config({{"topology", "1x1"}, {"workload", w}}));
}

int last_op(const Program& p, const std::string& name) {
  int at = -1;
  for (int i = 0; i < static_cast<int>(p.ops.size()); ++i)
    if (p.ops[i].name == name) at = i;
  REQUIRE(at >= 0);
  return at;
}

}  // namespace

TEST_CASE("selective remat drops each layer's scores, softmax and context until backward") {
  // One sequence per core. Per layer, bf16: the probabilities h s^2 (the scores are freed after
  // the softmax either way: its gradient reads only its output), context s d.
  const Program none = lm(2, {{"remat", "none"}});
  const Program attention = lm(2, {{"remat", "attention"}});
  const Program full = lm(2, {{"remat", "full"}});
  const int loss = last_op(none, "head.loss");
  REQUIRE(last_op(attention, "head.loss") == loss);
  const auto live_none = live_bytes_per_op(none), live_attn = live_bytes_per_op(attention);
  CHECK(live_none[loss] - live_attn[loss] == L * (2 * h * s * s + 2 * s * d));
  CHECK(activations_at(full, loss) < activations_at(attention, loss));
  // The recomputed FLOPs: attention scores and context, 2 x 2 s^2 d per layer.
  CHECK(sum_flops(attention) - sum_flops(none) == L * 2 * (2 * s * s * d));
  CHECK(analyze_memory(attention, 1e12).peak_bytes <= analyze_memory(none, 1e12).peak_bytes);
}

TEST_CASE(
    "microbatches: the activations of one microbatch, the FLOPs and gradient sync of the "
    "whole batch, an f32 accumulator per weight") {
  const Program one = lm(2, {});                     // one sequence per core, one pass
  const Program two = lm(4, {{"microbatches", 2}});  // two sequences per core, two passes
  const Program whole = lm(4, {});                   // two sequences per core, one pass
  CHECK(two.examples_per_step == 4);
  CHECK(activations_at(two, last_op(two, "head.loss")) ==
        activations_at(one, last_op(one, "head.loss")));
  CHECK(activations_at(whole, last_op(whole, "head.loss")) ==
        2 * activations_at(one, last_op(one, "head.loss")));
  CHECK(sum_flops(two) == Approx(sum_flops(whole)).epsilon(1e-12));
  double grads_two = 0, grads_whole = 0, master = 0, accumulators = 0;
  for (const auto& op : two.ops)
    if (op.is_collective && op.name.rfind("grad.", 0) == 0) grads_two += op.collective.bytes;
  for (const auto& op : whole.ops)
    if (op.is_collective && op.name.rfind("grad.", 0) == 0) grads_whole += op.collective.bytes;
  CHECK(grads_two == grads_whole);
  for (const auto& r : two.resident) {
    if (r.cls == MemoryClass::MasterWeights) master += r.bytes;
    if (r.cls == MemoryClass::WeightGradients) accumulators += r.bytes;
  }
  CHECK(accumulators == master);  // f32, one per weight
}

TEST_CASE("microbatches that do not divide a replica's batch are an error naming the path") {
  CHECK_THROWS_WITH(lm(2, {{"microbatches", 2}}), Catch::Contains("workload.microbatches"));
}
