// The partitioner's spatial rules on a small hand-made convolutional graph (the convolutional
// builders come with issue 4; these rules are what they build on).
#include <catch2/catch.hpp>

#include "models/ops.hpp"
#include "models/parallelism/partitioner.hpp"
#include "models/training.hpp"

using namespace tpusim;

namespace {
// Two 3x3 convolutions on a 32x32x128 image, lowered to matmuls over output pixels, split
// along H on the spatial axis; ReLU; global average pool (sums over H: partial per core); FC.
OpGraph small_convnet(double halo_bytes) {
  const std::int64_t pixels = 32 * 32, c = 128;
  OpGraph g;
  g.model = "small_convnet";
  g.replica_batch = 1;
  auto conv = [&](const std::string& name) {
    OpNode op = weight_matmul(name, pixels, 9 * c, c, false);
    op.kind = OpKind::Conv;
    op.conv = ConvShape{1, 32, 32, c, c, 3, 3, 1};
    op.split.spatial = SplitDim::M;
    op.halo_bytes = halo_bytes;
    return op;
  };
  const int c1 = g.add(conv("conv1"));
  const int c2 = g.add(conv("conv2"), {c1});
  OpNode relu = vector_op(OpKind::Elementwise, "relu", pixels * c, 1, 1, 2);
  relu.split.spatial = SplitDim::M;
  const int r = g.add(std::move(relu), {c2});
  OpNode pool = vector_op(OpKind::Pool, "pool", pixels * c, 1, 1, 1);
  pool.split.spatial = SplitDim::K;  // a sum over H: each core holds a partial sum
  pool.partial_bytes = c * 2;
  const int pv = g.add(std::move(pool), {r});
  const int fc = g.add(weight_matmul("fc", 1, c, 10, true), {pv});
  g.add(cross_entropy_loss("loss", 1, 10), {fc});
  derive_training_graph(g, OptimizerKind::Sgd);
  return g;
}

Layout spatial_layout() {
  Layout l;
  l.cores = 8;
  l.spatial = 2;
  l.data = 4;
  l.grad_bucket_bytes = 1 << 20;
  return l;
}

const Op* find(const Program& p, const std::string& name) {
  for (const auto& op : p.ops)
    if (op.name == name) return &op;
  return nullptr;
}
}  // namespace

TEST_CASE("spatial split: halo permutes before each split convolution and its input gradient") {
  // One boundary row of 32 pixels x 128 channels in bf16 to each neighbour.
  const double halo = 32.0 * 128 * 2;
  const Program p = partition(small_convnet(halo), spatial_layout());
  REQUIRE(p.mesh.size() == 3);
  CHECK(p.mesh[1].name == "spatial");
  for (const char* name : {"conv1", "conv2", "conv2.bwd_input"}) {
    INFO(name);
    for (const char* dir : {".halo.next", ".halo.prev"}) {
      const Op* h = find(p, std::string(name) + dir);
      REQUIRE(h);
      CHECK(h->collective.kind == CollectiveKind::CollectivePermute);
      CHECK(h->collective.bytes == halo);
      CHECK(h->collective.axes == std::vector<std::string>{"spatial"});
      CHECK(std::abs(h->collective.shift) == 1);
    }
  }
  CHECK_FALSE(find(p, "conv1.bwd_input.halo.next"));  // the image needs no gradient
  // Without a spatial split there is nothing to exchange.
  Layout flat = spatial_layout();
  flat.spatial = 1;
  flat.data = 8;
  CHECK(partition(small_convnet(halo), flat).num_collectives() == 1);  // the gradient all-reduce
}

TEST_CASE("spatial split: each core computes half the pixels and reduces pooled sums") {
  const Program p = partition(small_convnet(0), spatial_layout());
  const Op* conv = find(p, "conv1");
  REQUIRE(conv);
  REQUIRE(conv->compute.matmul);
  CHECK(conv->compute.matmul->m == 32 * 32 / 2);
  const Op* pool = find(p, "pool.all-reduce");
  REQUIRE(pool);
  CHECK(pool->collective.axes == std::vector<std::string>{"spatial"});
  CHECK(pool->collective.bytes == 128 * 2);
  // Weight gradients are partial over the spatial cores too; the gradient sync sums them over
  // data and spatial at once instead of a reduction per op.
  CHECK_FALSE(find(p, "conv1.bwd_weight.all-reduce"));
  int grad_syncs = 0;
  for (const auto& op : p.ops)
    if (op.is_collective && op.name.rfind("grad.bucket.", 0) == 0) {
      ++grad_syncs;
      CHECK(op.collective.axes == std::vector<std::string>{"data", "spatial"});
    }
  CHECK(grad_syncs == 1);
}
