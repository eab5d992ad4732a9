// The detection builders against the reference page (docs/detection.md): what runs on the
// device in a Mask R-CNN and an SSD step, with expectations from the shapes the page gives.
#include <catch2/catch.hpp>

#include "model_study.hpp"
#include "models/builders/ssd_layout.hpp"
#include "models/detection_ops.hpp"

using namespace tpusim;
using tpusim::test::graph_of;
using tpusim::test::model_study;
using tpusim::test::node_named;

namespace {

int count_prefix(const OpGraph& g, const std::string& prefix) {
  int n = 0;
  for (int v = 0; v < g.size(); ++v) n += g.node(v).name.rfind(prefix, 0) == 0;
  return n;
}

double sum_flops_prefix(const OpGraph& g, const std::string& prefix, Phase phase) {
  double s = 0;
  for (int v = 0; v < g.size(); ++v)
    if (g.node(v).name.rfind(prefix, 0) == 0 && g.node(v).phase == phase) s += g.node(v).flops;
  return s;
}

}  // namespace

TEST_CASE("Mask R-CNN proposals: per-level top-k of min(2000, anchors), tiled NMS, merge") {
  const auto cfg = model_study("maskrcnn", "2x2", 8);
  const OpGraph g = graph_of(cfg, 2);
  // Anchors per image and level from the page: 209664, 52416, 13104, 3276, 819.
  const std::int64_t anchors[] = {209664, 52416, 13104, 3276, 819};
  std::int64_t merged = 0;
  for (int l = 0; l < 5; ++l) {
    const std::string p = "proposals.p" + std::to_string(l + 2);
    const OpNode* topk = node_named(g, p + ".top_k");
    REQUIRE(topk);
    CHECK(topk->kind == OpKind::TopK);
    CHECK(topk->shapes.front() == std::vector<std::int64_t>{2, anchors[l]});
    const std::int64_t k = std::min<std::int64_t>(2000, anchors[l]);
    CHECK(topk->vpu_elements == 2 * bitonic_topk_element_stages(anchors[l], k));
    // NMS tiles of 512 over the boxes padded to 2048 (1024 for P6), each with 2 passes.
    const int tiles = l < 4 ? 4 : 2;
    CHECK(count_prefix(g, p + ".nms.tile") == tiles * (1 + 2));
    merged += std::min<std::int64_t>(1000, k);
  }
  CHECK(merged == 4819);  // the page's concatenation of all levels
  CHECK(node_named(g, "proposals.merge.top_k")->shapes.front() ==
        std::vector<std::int64_t>{2, 4819});
}

TEST_CASE("Mask R-CNN ROIAlign: one-hot einsums over every level, the page's 136 G MACs") {
  const auto cfg = model_study("maskrcnn", "2x2", 8);
  const OpGraph g = graph_of(cfg, 1);
  const std::int64_t h[] = {208, 104, 52, 26, 13}, w[] = {336, 168, 84, 42, 21};
  double macs = 0;
  for (const auto& [n, out] : {std::pair<double, double>{512, 7}, {128, 14}})
    for (int l = 0; l < 5; ++l)
      macs += n * out * h[l] * w[l] * 256 + n * out * out * w[l] * 256;  // rows, then columns
  const double flops = sum_flops_prefix(g, "box_head.roi_align", Phase::Forward) +
                       sum_flops_prefix(g, "mask_head.roi_align", Phase::Forward);
  CHECK(flops == Approx(2 * macs));
  CHECK(macs == Approx(136e9).epsilon(0.03));  // "about 136 G multiply-adds forward per image"
  const OpNode* rows = node_named(g, "box_head.roi_align.p2.rows");
  CHECK(rows->kind == OpKind::OneHotMatmul);
  CHECK(rows->dtype == DType::F32);
  // Backward: only the feature gradients (boxes are stop-gradient).
  CHECK(node_named(g, "box_head.roi_align.p2.rows.bwd_input_b") != nullptr);
  CHECK(node_named(g, "box_head.roi_align.p2.rows.bwd_input") == nullptr);
}

TEST_CASE("Mask R-CNN: folded frozen BN, conv0 and res2 untrained, the page's one-hot shapes") {
  const auto cfg = model_study("maskrcnn", "2x2", 8);
  const OpGraph g = graph_of(cfg, 2);
  for (int v = 0; v < g.size(); ++v) CHECK(g.node(v).kind != OpKind::BatchNorm);
  // The stem is a 4x4 stride-1 conv over 12 channels (space-to-depth 2).
  CHECK(node_named(g, "stem.conv")->shapes.at(1) == std::vector<std::int64_t>{4, 4, 12, 64});
  CHECK(node_named(g, "stem.conv.bwd_weight") == nullptr);
  CHECK(node_named(g, "backbone.stage1.2.conv3.bwd_weight") == nullptr);
  CHECK(node_named(g, "backbone.stage2.0.conv1.bwd_weight") != nullptr);
  CHECK(node_named(g, "backbone.stage2.0.conv1.bwd_input") == nullptr);  // nothing before it learns
  // The class box selection: one-hot [B*512, B*512*91] x [B*512*91, 4] in f32 (93184 at B = 2).
  const OpNode* sel = node_named(g, "box_head.select_class_box");
  CHECK(sel->kind == OpKind::OneHotMatmul);
  CHECK(sel->shapes.at(0) == std::vector<std::int64_t>{1, 1024, 93184});
  // The sampler: a full sort of the 1100 candidates.
  const OpNode* sort = node_named(g, "roi_sampler.sort");
  CHECK(sort->vpu_elements == 2 * 2048.0 * bitonic_sort_stages(2048));
}

TEST_CASE("Mask R-CNN eval: forward only, detections by per-class NMS, masks of 100") {
  const auto cfg = model_study("maskrcnn", "2x2", 8);
  const auto builder = make_model_builder("maskrcnn");
  const auto g = builder->build_eval(cfg, 4);
  REQUIRE(g);
  for (int v = 0; v < g->size(); ++v) CHECK(g->node(v).phase == Phase::Forward);
  CHECK(node_named(*g, "box_head.fc1")->matmul->m == 4 * 1000);
  CHECK(node_named(*g, "mask_head.conv0")->matmul->m == 4 * 100 * 14 * 14);
  // 90 foreground classes x 4 images, 1000 boxes in 2 tiles of 512.
  CHECK(node_named(*g, "detections.class_top_k")->shapes.front() ==
        std::vector<std::int64_t>{4 * 90, 1000});
  CHECK(count_prefix(*g, "detections.nms.tile") == 2 * 3);
}

TEST_CASE("SSD: 29 cross-replica BN layers, each one [2C] f32 all-reduce over its group") {
  const auto cfg = model_study("ssd", "4x4", 32, {{"spatial", 4}, {"bn_group_cores", 16}});
  const OpGraph g = graph_of(cfg, 8);
  int bn_layers = 0;
  for (int v = 0; v < g.size(); ++v) {
    const OpNode& n = g.node(v);
    if (n.phase != Phase::Forward || n.kind != OpKind::BatchNorm || n.partial_bytes <= 0) continue;
    ++bn_layers;
    CHECK(n.partial_bytes == 2.0 * n.conv->out_channels * 4);  // sum and sum of squares, f32
  }
  // ResNet-34 groups 1-3: the stem, 3 + 4 + 6 basic blocks of 2 convs, 2 projection shortcuts;
  // the extra blocks have none.
  CHECK(bn_layers == 1 + 2 * (3 + 4 + 6) + 2);
  CHECK(node_named(g, "extra.0.conv3x3.bn") == nullptr);
  // One all-reduce per layer forward (and one for its gradient) over {bn, spatial}.
  const Program p = test::program_of(cfg);
  int forward = 0;
  for (const auto& op : p.ops)
    if (op.is_collective && op.phase == Phase::Forward &&
        op.name.find(".bn.stats.all-reduce") != std::string::npos) {
      ++forward;
      CHECK(op.collective.dtype == DType::F32);
      CHECK(op.collective.axes == std::vector<std::string>{"bn", "spatial"});
    }
  CHECK(forward == bn_layers);
}

TEST_CASE("SSD hard negative mining: 31 device steps over [B, 8732], no sort") {
  const auto cfg = model_study("ssd", "2x2", 8);
  const OpGraph g = graph_of(cfg, 4);
  CHECK(count_prefix(g, "loss.mining_search.iter") == 31);
  for (int v = 0; v < g.size(); ++v) CHECK(g.node(v).kind != OpKind::TopK);
  const OpNode* step = node_named(g, "loss.mining_search.iter30");
  REQUIRE(step);
  CHECK(step->vpu_elements == 4.0 * ssd_default_boxes(300));
  CHECK(step->dtype == DType::F32);
}

TEST_CASE("SSD labels: partitioned (TF) sums per-box losses, replicated (JAX) gathers outputs") {
  const auto tf = test::program_of(model_study("ssd", "2x2", 8, {{"spatial", 8}}));
  const auto jax = test::program_of(
      model_study("ssd", "2x2", 8, {{"spatial", 8}}, {{"labels_partitioned", false}}));
  auto bytes_of = [](const Program& p, const std::string& name) {
    for (const auto& op : p.ops)
      if (op.name == name) return op.collective.bytes;
    return -1.0;
  };
  const double boxes = 8.0 * ssd_default_boxes(300);  // 8 images per replica
  // TF pads each level's label rows to a multiple of 8: 40, 24, 16, 8, 8, 8 rows.
  CHECK(ssd_partitioned_boxes(300, 8) ==
        40 * 38 * 4 + 24 * 19 * 6 + 16 * 10 * 6 + 8 * 5 * 6 + 8 * 3 * 4 + 8 * 1 * 4);
  CHECK(bytes_of(tf, "loss.per_box.all-reduce") == 8.0 * ssd_partitioned_boxes(300, 8) * 4);
  CHECK(bytes_of(jax, "loss.per_box.all-reduce") == -1);
  CHECK(bytes_of(jax, "loss.whole_predictions.all-reduce") == boxes * (81 + 4) * 2);
  // The JAX loss runs on whole images on every core, TF on an eighth of the padded boxes.
  auto elements = [](const Program& p) {
    for (const auto& op : p.ops)
      if (op.name == "loss.per_box") return op.compute.vpu_elements;
    return 0.0;
  };
  CHECK(elements(jax) == Approx(boxes * 85));
  CHECK(elements(tf) == Approx(8.0 * ssd_partitioned_boxes(300, 8) * 85 / 8));
}

TEST_CASE("SSD eval: forward, per-class top-k of 200, NMS in tiles of 256") {
  const auto cfg = model_study("ssd", "2x2", 8);
  const auto g = make_model_builder("ssd")->build_eval(cfg, 4);
  REQUIRE(g);
  for (int v = 0; v < g->size(); ++v) {
    CHECK(g->node(v).phase == Phase::Forward);
    CHECK(g->node(v).name.rfind("loss.", 0) != 0);
  }
  CHECK(node_named(*g, "detections.class_top_k")->shapes.front() ==
        std::vector<std::int64_t>{4 * 80, ssd_default_boxes(300)});
  CHECK(count_prefix(*g, "detections.nms.tile") == 1 * (1 + 2));  // 200 boxes: one tile
}
