// The memory model: resident buffers and output lifetimes from the Program, against closed forms
// (bytes per weight of each class, the activation peak of a chain of layers, BERT-Large's
// parameter bytes from its layer list).
#include <catch2/catch.hpp>

#include "model_study.hpp"
#include "models/memory/memory_classes.hpp"
#include "models/memory/memory_model.hpp"
#include "models/ops.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/partitioner.hpp"
#include "models/training.hpp"

using namespace tpusim;
using tpusim::test::graph_of;
using tpusim::test::model_study;
using tpusim::test::program_of;
using tpusim::test::single_core;

namespace {
constexpr double kHuge = 1e18;  // a capacity nothing exceeds

double at_peak(const MemoryProfile& m, MemoryClass c) {
  return m.bytes_by_class[static_cast<int>(c)];
}

double resident(const Program& p, MemoryClass c) {
  double s = 0;
  for (const auto& r : p.resident)
    if (r.cls == c) s += r.bytes;
  return s;
}

// `layers` bias-free [m, h] x [h, h] layers in a chain, then a loss; trained with `opt`.
OpGraph chain(int layers, std::int64_t m, std::int64_t h, OptimizerKind opt) {
  OpGraph g;
  g.replica_batch = m;
  int x = -1;
  for (int i = 0; i < layers; ++i) {
    OpNode layer = weight_matmul("layer" + std::to_string(i), m, h, h, false);
    x = x < 0 ? g.add(std::move(layer)) : g.add(std::move(layer), {x});
  }
  g.add(cross_entropy_loss("loss", m, h), {x});
  derive_training_graph(g, opt);
  return g;
}
}  // namespace

TEST_CASE("memory: one dense layer under Adam holds weights, gradient and two moments exactly") {
  // P = k*n + n parameters: f32 master (4 P), bf16 copy (2 P), Adam's two f32 moments (8 P), and
  // the f32 gradient (4 P) from dW until the update. The peak is at dW, where the bf16 gradient
  // of the logits (2 m n bytes) is still read.
  const std::int64_t m = 8, k = 1024, n = 1024;
  OpGraph g;
  g.replica_batch = m;
  const int dense = g.add(weight_matmul("dense", m, k, n, true));
  g.add(cross_entropy_loss("loss", m, n), {dense});
  derive_training_graph(g, OptimizerKind::Adam);
  const Program p = partition(g, single_core());
  const double P = static_cast<double>(k * n + n);
  const MemoryProfile mem = analyze_memory(p, kHuge);
  REQUIRE(mem.known);
  CHECK(mem.peak_op_name == "dense.bwd_weight");
  CHECK(at_peak(mem, MemoryClass::MasterWeights) == 4 * P);
  CHECK(at_peak(mem, MemoryClass::WeightCopies) == 2 * P);
  CHECK(at_peak(mem, MemoryClass::OptimizerState) == 8 * P);
  CHECK(at_peak(mem, MemoryClass::WeightGradients) == 4 * P);
  CHECK(at_peak(mem, MemoryClass::ActivationGradients) == 2.0 * m * n);
  CHECK(mem.peak_bytes == 18 * P + 2.0 * m * n);
  CHECK(mem.fits());
  CHECK(mem.headroom_bytes() == kHuge - mem.peak_bytes);
}

TEST_CASE("memory: the activation peak of a chain of N equal layers") {
  // Each layer's [m, h] bf16 output is kept for the next layer's backward. At the loss gradient
  // all N outputs, the f32 loss per row and the logits gradient are live:
  //   peak = 14 N h^2 (Adam: 4 + 2 + 8 bytes per weight) + (N + 1) 2 m h + 4 m.
  const std::int64_t m = 65536, h = 128;
  for (int layers : {1, 3, 8}) {
    const Program p = partition(chain(layers, m, h, OptimizerKind::Adam), single_core());
    const MemoryProfile mem = analyze_memory(p, kHuge);
    CHECK(mem.peak_op_name == "loss.bwd");
    CHECK(mem.peak_bytes == 14.0 * layers * h * h + (layers + 1) * 2.0 * m * h + 4.0 * m);
    CHECK(at_peak(mem, MemoryClass::Activations) == layers * 2.0 * m * h + 4.0 * m);
  }
}

TEST_CASE("memory: optimizer slots per optimizer") {
  const std::int64_t h = 256;
  for (auto [opt, slots] : {std::pair{OptimizerKind::Adam, 2},
                            {OptimizerKind::Lamb, 2},
                            {OptimizerKind::Sgd, 1},
                            {OptimizerKind::Lars, 1}}) {
    const Program p = partition(chain(2, 64, h, opt), single_core());
    CHECK(resident(p, MemoryClass::OptimizerState) == 2.0 * h * h * slots * 4);
  }
}

TEST_CASE("memory: weight-update sharding divides masters and optimizer slots by the replicas") {
  // 4x4 chips = 32 data replicas; the bf16 copies stay whole on every core.
  const auto whole = program_of(model_study("bert_large", "4x4", 32));
  const auto sharded =
      program_of(model_study("bert_large", "4x4", 32, {{"weight_update_sharding", true}}));
  CHECK(resident(sharded, MemoryClass::OptimizerState) ==
        Approx(resident(whole, MemoryClass::OptimizerState) / 32).epsilon(1e-12));
  CHECK(resident(sharded, MemoryClass::MasterWeights) ==
        Approx(resident(whole, MemoryClass::MasterWeights) / 32).epsilon(1e-12));
  CHECK(resident(sharded, MemoryClass::WeightCopies) == resident(whole, MemoryClass::WeightCopies));
}

TEST_CASE("memory: model parallelism divides exactly the weights it splits") {
  const auto cfg = model_study("bert_large", "4x4", 16, {{"model", 2}});
  const OpGraph g = graph_of(cfg, 1);
  double split = 0, whole = 0;
  for (int v = 0; v < g.size(); ++v)
    if (g.node(v).phase == Phase::Forward)
      (g.node(v).params_split_by_model ? split : whole) += static_cast<double>(g.node(v).params);
  REQUIRE(split > 0);
  const Program p = program_of(cfg);
  CHECK(resident(p, MemoryClass::MasterWeights) == Approx(4 * (split / 2 + whole)).epsilon(1e-12));
  CHECK(resident(p, MemoryClass::WeightCopies) == Approx(2 * (split / 2 + whole)).epsilon(1e-12));
}

TEST_CASE("memory: BERT-Large's f32 master weights are 4 bytes times its layer list's parameters") {
  // Per encoder layer: QKV and output projections with biases (4 h^2 + 4 h), two layer norms
  // (4 h), the feed-forward pair (2 h f + f + h). Embeddings (vocab + seq + 2 segments) h and
  // their layer norm (2 h); MLM transform (h^2 + h), its layer norm (2 h) and decoder bias
  // (vocab); pooler (h^2 + h) and the 2-way classifier (2 h + 2).
  const double h = 1024, f = 4096, layers = 24, vocab = 30522, seq = 512;
  const double params = layers * (4 * h * h + 4 * h + 4 * h + 2 * h * f + f + h) +
                        (vocab + seq + 2) * h + 2 * h + (h * h + h) + 2 * h + vocab + (h * h + h) +
                        (2 * h + 2);
  CHECK(params == Approx(335e6).epsilon(0.005));  // "about 335 M" (workloads.md)
  const Program p = program_of(model_study("bert_large", "4x4", 32));
  CHECK(resident(p, MemoryClass::MasterWeights) == 4 * params);
}

TEST_CASE("memory: an exceeded capacity is a verdict naming peak, capacity and largest classes") {
  const Program p = partition(chain(3, 65536, 128, OptimizerKind::Adam), single_core());
  const MemoryProfile mem = analyze_memory(p, 1024);
  CHECK_FALSE(mem.fits());
  CHECK(mem.headroom_bytes() < 0);
  const std::string why = describe_oom(mem);
  CHECK(why.find("exceeds the 1 KiB") != std::string::npos);
  CHECK(why.find("activations") != std::string::npos);
  CHECK(why.find("loss.bwd") != std::string::npos);
  REQUIRE(!mem.largest.empty());
  for (std::size_t i = 1; i < mem.largest.size(); ++i)
    CHECK(mem.largest[i - 1].bytes >= mem.largest[i].bytes);
}

TEST_CASE("memory: live bytes per op never fall below the resident buffers and peak at the peak") {
  const Program p = program_of(model_study("bert_large", "4x4", 32));
  const auto live = live_bytes_per_op(p);
  const MemoryProfile mem = analyze_memory(p, kHuge);
  REQUIRE(live.size() == p.ops.size());
  for (double b : live) CHECK(b >= mem.resident_bytes - 1e-3);
  CHECK(*std::max_element(live.begin(), live.end()) == mem.peak_bytes);
  CHECK(live[mem.peak_op] == mem.peak_bytes);
}

namespace {
// `layers` layers of [m, h] x [h, h] then GELU, each a layer for rematerialization; then a loss.
OpGraph gelu_chain(int layers, std::int64_t m, std::int64_t h, bool rematerialize) {
  OpGraph g;
  g.replica_batch = m;
  int x = -1;
  for (int i = 0; i < layers; ++i) {
    const std::string p = "layer" + std::to_string(i) + ".";
    g.begin_layer();
    OpNode mm = weight_matmul(p + "dense", m, h, h, false);
    x = x < 0 ? g.add(std::move(mm)) : g.add(std::move(mm), {x});
    x = g.add(vector_op(OpKind::Elementwise, p + "gelu", static_cast<double>(m) * h, 1,
                        vpu_ops::kGelu, vpu_ops::kGeluGrad),
              {x});
    g.end_layer();
  }
  g.add(cross_entropy_loss("loss", m, h), {x});
  derive_training_graph(g, OptimizerKind::Adam, rematerialize);
  return g;
}
}  // namespace

TEST_CASE("memory: rematerialization keeps only layer outputs and recomputes the rest") {
  // T = 2 m h bytes, one [m, h] bf16 tensor. At the last GELU's gradient, without
  // rematerialization every layer's matmul and GELU outputs are live, plus dY and dX: 2N + 2
  // tensors. With it, the N - 1 earlier layer outputs, dY, the recomputed matmul and GELU outputs
  // and dX: N + 3 tensors. Resident: 14 bytes per weight (Adam), N h^2 weights.
  const std::int64_t m = 65536, h = 128;
  const double T = 2.0 * m * h;
  for (int layers : {2, 4, 8}) {
    const std::string last = "layer" + std::to_string(layers - 1) + ".gelu.bwd";
    const double resident = 14.0 * layers * h * h;
    const MemoryProfile kept =
        analyze_memory(partition(gelu_chain(layers, m, h, false), single_core()), kHuge);
    CHECK(kept.peak_op_name == last);
    CHECK(kept.peak_bytes == resident + (2 * layers + 2) * T);
    const MemoryProfile remat =
        analyze_memory(partition(gelu_chain(layers, m, h, true), single_core()), kHuge);
    CHECK(remat.peak_op_name == last);
    CHECK(remat.peak_bytes == resident + (layers + 3) * T);
    // The price: one more forward pass of every layer's matmul.
    const double extra = gelu_chain(layers, m, h, true).total_flops(Phase::Backward) -
                         gelu_chain(layers, m, h, false).total_flops(Phase::Backward);
    CHECK(extra == layers * 2.0 * m * h * h);
  }
}

TEST_CASE("memory: BERT-Large rematerialized keeps less and computes more") {
  const auto plain = model_study("bert_large", "4x4", 32 * 8);
  const auto remat = model_study("bert_large", "4x4", 32 * 8, {}, {{"rematerialize", true}});
  const Program a = program_of(plain), b = program_of(remat);
  const MemoryProfile ma = analyze_memory(a, kHuge), mb = analyze_memory(b, kHuge);
  CHECK(mb.bytes_by_class[static_cast<int>(MemoryClass::Activations)] <
        ma.bytes_by_class[static_cast<int>(MemoryClass::Activations)] / 4);
  CHECK(mb.resident_bytes == ma.resident_bytes);
  // 24 encoder layers recomputed: the extra FLOPs are the encoder's forward FLOPs.
  const OpGraph g = graph_of(plain, 8);
  double encoder_forward = 0;
  for (int v = 0; v < g.size(); ++v)
    if (g.node(v).phase == Phase::Forward && g.node(v).layer >= 0)
      encoder_forward += g.node(v).flops;
  CHECK(tpusim::test::sum_flops(b) - tpusim::test::sum_flops(a) ==
        Approx(encoder_forward).epsilon(1e-9));
}

TEST_CASE("memory: every class has its dtype, lifetime and source, in enum order") {
  REQUIRE(memory_classes().size() == static_cast<std::size_t>(kMemoryClasses));
  for (int c = 0; c < kMemoryClasses; ++c) {
    CHECK(memory_classes()[c].cls == static_cast<MemoryClass>(c));
    CHECK(std::string(memory_classes()[c].source).size() > 20);
    CHECK(std::string(to_string(static_cast<MemoryClass>(c))) != "?");
  }
}

TEST_CASE("memory: a Program without sizes (a trace) is unknown, and fits") {
  Program p = program_of(model_study("bert_large", "2x2", 8));
  p.has_memory = false;
  const MemoryProfile m = analyze_memory(p, 1);
  CHECK_FALSE(m.known);
  CHECK(m.fits());
  CHECK(live_bytes_per_op(p).empty());
}

namespace {
// in [m, h] x [h, f], a GELU over its [m, f] output (its gradient reading `reads`), out
// [m, f] x [f, h], a loss; trained with SGD on one core.
Program gelu_layer_program(std::int64_t m, std::int64_t h, std::int64_t f, GradReads reads) {
  OpGraph g;
  g.replica_batch = m;
  const int in = g.add(weight_matmul("in", m, h, f, false));
  OpNode gelu = vector_op(OpKind::Elementwise, "gelu", static_cast<double>(m) * f, 1,
                          vpu_ops::kGelu, vpu_ops::kGeluGrad);
  gelu.grad_reads = reads;
  const int act = g.add(std::move(gelu), {in});
  const int out = g.add(weight_matmul("out", m, f, h, false), {act});
  g.add(cross_entropy_loss("loss", m, h), {out});
  derive_training_graph(g, OptimizerKind::Sgd);
  return partition(g, single_core());
}
}  // namespace

TEST_CASE(
    "memory: a GELU's gradient keeps its input, and its output only for the down projection") {
  // gelu'(x) is a function of x: the [m, f] bf16 input stays until gelu.bwd, the output (2 m f
  // bytes) only until out.bwd_weight reads it, which runs before gelu.bwd. During gelu.bwd the
  // activations are the input alone: 2 m f bytes, where a gradient reading its output as well
  // kept 4 m f.
  const std::int64_t m = 4096, h = 256, f = 1024;
  const Program p = gelu_layer_program(m, h, f, GradReads::Inputs);
  const int gelu = test::index_of(p, "gelu");
  CHECK(p.ops[gelu].output.bytes == 2.0 * m * f);
  CHECK(p.ops[gelu].output.last_use == test::index_of(p, "out.bwd_weight"));
  CHECK(test::index_of(p, "out.bwd_weight") < test::index_of(p, "gelu.bwd"));
  CHECK(p.ops[test::index_of(p, "in")].output.last_use == test::index_of(p, "gelu.bwd"));
  CHECK(test::activations_at(p, test::index_of(p, "gelu.bwd")) == 2.0 * m * f);

  const Program both = gelu_layer_program(m, h, f, GradReads::InputsAndOutput);
  CHECK(both.ops[gelu].output.last_use == test::index_of(both, "gelu.bwd"));
  CHECK(test::activations_at(both, test::index_of(both, "gelu.bwd")) == 4.0 * m * f);
  // The same work: only lifetimes move.
  CHECK(p.ops.size() == both.ops.size());
  CHECK(test::op_named(p, "gelu.bwd").compute.bytes_read ==
        test::op_named(both, "gelu.bwd").compute.bytes_read);
}
