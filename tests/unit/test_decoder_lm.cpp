// The decoder-only language model builder (models/builders/decoder_lm.cpp) against closed forms
// of its presets' parameters: parameter counts and training FLOPs per token 6N + 12 L s H Q.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "model_study.hpp"
#include "models/op_graph.hpp"

using namespace tpusim;
using tpusim::test::graph_of;

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
  for (const char* preset : {"decoder_1b", "gpt3_175b", "palm_62b", "palm_540b"}) {
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
