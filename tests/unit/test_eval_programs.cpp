// Evaluation programs (workload.program = eval): forward-only graphs with on-device
// post-processing, partitioned without gradient sync or optimizer.
#include <catch2/catch.hpp>
#include <string>

#include "core/errors.hpp"
#include "model_study.hpp"
#include "models/op_graph.hpp"

using namespace tpusim;
using tpusim::test::model_study;
using tpusim::test::program_of;
using tpusim::test::sum_flops;

namespace {

Config eval_study(const std::string& model, const std::string& topology, long long batch,
                  nlohmann::json parallelism = nlohmann::json::object(),
                  nlohmann::json extra = nlohmann::json::object()) {
  extra["program"] = "eval";
  return model_study(model, topology, batch, std::move(parallelism), std::move(extra));
}

OpGraph eval_graph(const Config& cfg, long long replica_batch) {
  return *make_model_builder(cfg.string("workload.model"))->build_eval(cfg, replica_batch);
}

int count_phase(const OpGraph& g, Phase p) {
  int n = 0;
  for (int v = 0; v < g.size(); ++v) n += g.node(v).phase == p;
  return n;
}

double forward_flops(const OpGraph& g) { return g.total_flops(Phase::Forward); }

int count_named(const Program& p, const std::string& part) {
  int n = 0;
  for (const auto& op : p.ops) n += op.name.find(part) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("eval graphs hold forward ops only - their MXU work is the training forward pass") {
  for (const char* model : {"bert_large", "resnet50"}) {
    CAPTURE(model);
    const Config cfg = eval_study(model, "4x4", 32);
    const OpGraph eval = eval_graph(cfg, 2);
    CHECK(count_phase(eval, Phase::Backward) == 0);
    CHECK(count_phase(eval, Phase::Optimizer) == 0);
    // Post-processing (argmax, compare) is vector work: the MXU FLOPs equal the training
    // graph's forward FLOPs at the same replica batch.
    const OpGraph train = make_model_builder(model)->build(cfg, 2);
    CHECK(eval.total_flops() == Approx(forward_flops(train)).epsilon(1e-12));
  }
}

TEST_CASE("a data-parallel eval program has no collective: no gradient sync, no optimizer") {
  // BERT, pure data parallel; ResNet-50 with cross-replica BN groups in training, whose batch
  // norm is in inference form in eval (moving statistics, nothing to all-reduce).
  const Program bert = program_of(eval_study("bert_large", "4x4", 64));
  CHECK(bert.num_collectives() == 0);
  const Program resnet = program_of(eval_study("resnet50", "4x4", 256, {{"bn_group_cores", 8}}));
  CHECK(resnet.num_collectives() == 0);
  const Program train = program_of(model_study("resnet50", "4x4", 256, {{"bn_group_cores", 8}}));
  CHECK(train.num_collectives() > 0);
}

TEST_CASE("the eval program runs at workload.eval_batch - 0 means the training batch") {
  const Program p = program_of(eval_study("bert_large", "4x4", 32, {}, {{"eval_batch", 96}}));
  CHECK(p.examples_per_step == 96);
  CHECK(p.ops.front().shapes.front().front() == 96 / 32 * 512);  // tokens of 3 sequences
  const Program same = program_of(eval_study("bert_large", "4x4", 32));
  CHECK(same.examples_per_step == 32);
  // MXU work per core scales with the replica batch: 3 sequences against 1.
  CHECK(sum_flops(p) == Approx(3 * sum_flops(same)).epsilon(1e-9));
}

TEST_CASE("BERT eval: masked-LM accuracy over the split vocabulary is all-reduced over model") {
  const Program p =
      program_of(eval_study("bert_large", "4x4", 8, {{"model", 4}}, {{"vocab", 30528}}));
  CHECK(count_named(p, "mlm.accuracy") == 2);  // the argmax and its all-reduce
  CHECK(count_named(p, "grad.") == 0);
  CHECK(count_named(p, ".opt") == 0);
  for (const auto& op : p.ops)
    if (op.is_collective) CHECK(op.collective.axes == std::vector<std::string>{"model"});
}

TEST_CASE("Transformer eval: beam search of decode_length steps over beam x batch rows") {
  const long long L = 5, W = 3, B = 2;
  const Config cfg =
      eval_study("transformer_big", "4x4", 32 * B, {}, {{"decode_length", L}, {"beam_size", W}});
  const OpGraph g = eval_graph(cfg, B);
  const double h = 1024, V = 33708, heads = 16;
  int steps = 0;
  double logits_flops = 0;
  for (int v = 0; v < g.size(); ++v) {
    const OpNode& n = g.node(v);
    if (n.name.find(".top_k") != std::string::npos) {
      ++steps;
      CHECK(n.vpu_elements == B * W * V);  // candidates over beam x vocabulary per sentence
    }
    if (n.name.find(".logits") != std::string::npos) logits_flops += n.flops;
    // Step t's self-attention scores one query per beam against t cached keys.
    const std::string self = ".0.attention.scores";
    const auto at = n.name.find(self);
    if (n.name.rfind("decode.step", 0) == 0 && at != std::string::npos) {
      const long long t = std::stoll(n.name.substr(11, at - 11));
      CHECK(n.matmul->batch == B * W * heads);
      CHECK(n.matmul->m == 1);
      CHECK(n.matmul->n == t);
    }
  }
  CHECK(steps == L);
  CHECK(logits_flops == Approx(L * 2 * B * W * h * V));
  CHECK(count_phase(g, Phase::Backward) == 0);
}

TEST_CASE("eval batch errors name workload.eval_batch") {
  try {
    program_of(eval_study("bert_large", "4x4", 32, {}, {{"eval_batch", 33}}));
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Catch::StartsWith("workload.eval_batch: 33 examples"));
  }
  CHECK_THROWS_AS(model_study("bert_large", "4x4", 32, {}, {{"program", "infer"}}), ConfigError);
}
