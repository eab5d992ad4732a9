// The detection builders against the reference page (docs/detection.md): what runs on the
// device in a Mask R-CNN and an SSD step, with expectations from the shapes the page gives.
#include <catch2/catch.hpp>

#include "model_study.hpp"
#include "models/builders/ssd_layout.hpp"
#include "models/detection_ops.hpp"

using namespace tpusim;
using tpusim::test::graph_of;
using tpusim::test::model_study;

namespace {

const OpNode* find(const OpGraph& g, const std::string& name) {
  for (int v = 0; v < g.size(); ++v)
    if (g.node(v).name == name) return &g.node(v);
  return nullptr;
}

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
    const OpNode* topk = find(g, p + ".top_k");
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
  CHECK(find(g, "proposals.merge.top_k")->shapes.front() == std::vector<std::int64_t>{2, 4819});
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
  const OpNode* rows = find(g, "box_head.roi_align.p2.rows");
  CHECK(rows->kind == OpKind::OneHotMatmul);
  CHECK(rows->dtype == DType::F32);
  // Backward: only the feature gradients (boxes are stop-gradient).
  CHECK(find(g, "box_head.roi_align.p2.rows.bwd_input_b") != nullptr);
  CHECK(find(g, "box_head.roi_align.p2.rows.bwd_input") == nullptr);
}

TEST_CASE("Mask R-CNN: folded frozen BN, conv0 and res2 untrained, the page's one-hot shapes") {
  const auto cfg = model_study("maskrcnn", "2x2", 8);
  const OpGraph g = graph_of(cfg, 2);
  for (int v = 0; v < g.size(); ++v) CHECK(g.node(v).kind != OpKind::BatchNorm);
  // The stem is a 4x4 stride-1 conv over 12 channels (space-to-depth 2).
  CHECK(find(g, "stem.conv")->shapes.at(1) == std::vector<std::int64_t>{4, 4, 12, 64});
  CHECK(find(g, "stem.conv.bwd_weight") == nullptr);
  CHECK(find(g, "backbone.stage1.2.conv3.bwd_weight") == nullptr);
  CHECK(find(g, "backbone.stage2.0.conv1.bwd_weight") != nullptr);
  CHECK(find(g, "backbone.stage2.0.conv1.bwd_input") == nullptr);  // nothing before it learns
  // The class box selection: one-hot [B*512, B*512*91] x [B*512*91, 4] in f32 (93184 at B = 2).
  const OpNode* sel = find(g, "box_head.select_class_box");
  CHECK(sel->kind == OpKind::OneHotMatmul);
  CHECK(sel->shapes.at(0) == std::vector<std::int64_t>{1, 1024, 93184});
  // The sampler: a full sort of the 1100 candidates.
  const OpNode* sort = find(g, "roi_sampler.sort");
  CHECK(sort->vpu_elements == 2 * 2048.0 * bitonic_sort_stages(2048));
}

TEST_CASE("Mask R-CNN eval: forward only, detections by per-class NMS, masks of 100") {
  const auto cfg = model_study("maskrcnn", "2x2", 8);
  const auto builder = make_model_builder("maskrcnn");
  const auto g = builder->build_eval(cfg, 4);
  REQUIRE(g);
  for (int v = 0; v < g->size(); ++v) CHECK(g->node(v).phase == Phase::Forward);
  CHECK(find(*g, "box_head.fc1")->matmul->m == 4 * 1000);
  CHECK(find(*g, "mask_head.conv0")->matmul->m == 4 * 100 * 14 * 14);
  // 90 foreground classes x 4 images, 1000 boxes in 2 tiles of 512.
  CHECK(find(*g, "detections.class_top_k")->shapes.front() ==
        std::vector<std::int64_t>{4 * 90, 1000});
  CHECK(count_prefix(*g, "detections.nms.tile") == 2 * 3);
}
