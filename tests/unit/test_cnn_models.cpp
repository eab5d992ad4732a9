// Convolutional builders against closed forms derived from their layer lists (shared reference
// workloads.md): ResNet-50 v1.5 and the SSD ResNet-34 backbone FLOPs, parameter counts, SSD's
// feature maps and default boxes, Mask R-CNN's structure.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "model_study.hpp"
#include "models/builders/ssd_layout.hpp"
#include "models/conv_ops.hpp"

using namespace tpusim;
using tpusim::test::graph_of;
using tpusim::test::model_study;
using tpusim::test::node_named;

namespace {

// MACs of a square conv producing out x out x cout from cin channels with a k x k window.
double conv_macs(double out, double k, double cin, double cout) {
  return out * out * k * k * cin * cout;
}

// ResNet-50 v1.5 forward MACs per image at 224 from its layer list (7x7/2 stem).
double resnet50_macs() {
  double macs = conv_macs(112, 7, 3, 64);
  const int blocks[] = {3, 4, 6, 3}, widths[] = {64, 128, 256, 512}, sizes[] = {56, 28, 14, 7};
  double cin = 64, in_size = 56;
  for (int s = 0; s < 4; ++s) {
    const double w = widths[s], out = sizes[s];
    for (int b = 0; b < blocks[s]; ++b) {
      const double c = b == 0 ? cin : 4 * w, size_in = b == 0 ? in_size : out;
      macs += conv_macs(size_in, 1, c, w);  // 1x1 before the (strided) 3x3: input resolution
      macs += conv_macs(out, 3, w, w);
      macs += conv_macs(out, 1, w, 4 * w);
      if (b == 0) macs += conv_macs(out, 1, c, 4 * w);  // projection shortcut
    }
    cin = 4 * w;
    in_size = out;
  }
  return macs + 2048.0 * 1000;  // classifier
}

}  // namespace

TEST_CASE(
    "ResNet-50 forward FLOPs per image equal 2 x the MACs of its layer list (about 8.2 GFLOP)") {
  auto cfg = model_study("resnet50", "2x2", 8, {}, {{"space_to_depth", false}});
  const OpGraph g = graph_of(cfg, 1);
  const double expected = 2 * resnet50_macs();
  CHECK(g.total_flops(Phase::Forward) == Approx(expected).epsilon(1e-12));
  CHECK(expected == Approx(8.2e9).epsilon(0.02));
  // Backward: every conv and the classifier give an input-gradient and a weight-gradient product
  // of the forward's size, except the stem, whose input (the image) needs no gradient.
  const double stem = 2 * conv_macs(112, 7, 3, 64);
  CHECK(g.total_flops(Phase::Backward) == Approx(2 * expected - stem).epsilon(1e-12));
}

TEST_CASE("ResNet-50 has 25.56 M parameters: convs, BN gamma and beta, classifier") {
  auto cfg = model_study("resnet50", "2x2", 8, {}, {{"space_to_depth", false}});
  // torchvision's resnet50 count, which holds the same tensors.
  CHECK(graph_of(cfg, 1).total_params() == 25557032);
  // The space-to-depth stem's 4x4x12 kernel holds the 7x7x3 one zero-padded to 8x8x3.
  auto s2d = model_study("resnet50", "2x2", 8);
  CHECK(graph_of(s2d, 1).total_params() - 25557032 == 4 * 4 * 12 * 64 - 7 * 7 * 3 * 64);
}

TEST_CASE(
    "space-to-depth stem: 2x2 blocks of the image become 12 channels of a 4x4 stride-1 conv") {
  auto cfg = model_study("resnet50", "2x2", 8);
  const OpGraph g = graph_of(cfg, 1);
  const OpNode* stem = node_named(g, "stem.conv");
  REQUIRE(stem);
  CHECK(stem->conv->height == 112);
  CHECK(stem->conv->in_channels == 12);
  CHECK(stem->conv->kernel_h == 4);
  CHECK(stem->conv->out_height == 112);
  // 16 taps of 12 channels: 128 / 12 = 10 taps share one pass of the array's rows, so two
  // [112*112, 120] x [120, 64] products (the second holds 6 taps; FLOPs count only real taps).
  CHECK(stem->matmul->batch == 2);
  CHECK(stem->matmul->m == 112 * 112);
  CHECK(stem->matmul->k == 120);
  CHECK(stem->matmul->n == 64);
  CHECK(stem->flops == 2.0 * 112 * 112 * 16 * 12 * 64);
}

TEST_CASE("conv lowering: one tap per pass from 128 channels up, packed taps below") {
  CHECK(taps_per_pass(512, 9, 128) == 1);
  CHECK(taps_per_pass(128, 9, 128) == 1);
  CHECK(taps_per_pass(64, 9, 128) == 2);
  CHECK(taps_per_pass(3, 49, 128) == 42);
  CHECK(taps_per_pass(1, 9, 128) == 9);  // never more taps than the kernel has
  auto cfg = model_study("resnet50", "2x2", 8);
  const OpGraph g = graph_of(cfg, 1);
  const OpNode* wide = node_named(g, "stage4.1.conv2");  // 3x3, 512 -> 512 on 7x7
  CHECK(wide->matmul->batch == 9);
  CHECK(wide->matmul->k == 512);
  const OpNode* narrow = node_named(g, "stage1.1.conv2");  // 3x3, 64 -> 64 on 56x56
  CHECK(narrow->matmul->batch == 5);
  CHECK(narrow->matmul->k == 128);
  CHECK(narrow->flops == 2.0 * 56 * 56 * 9 * 64 * 64);
  // Gradients: input gradient and weight gradient each have the forward's FLOPs.
  CHECK(node_named(g, "stage1.1.conv2.bwd_input")->flops == narrow->flops);
  CHECK(node_named(g, "stage1.1.conv2.bwd_weight")->flops == narrow->flops);
}

TEST_CASE("SSD backbone FLOPs per image equal its ResNet-34 layer list up to conv4 (stride 1)") {
  auto cfg = model_study("ssd", "2x2", 8, {}, {{"space_to_depth", false}});
  const OpGraph g = graph_of(cfg, 1);
  double macs = conv_macs(150, 7, 3, 64);
  macs += 3 * 2 * conv_macs(75, 3, 64, 64);  // conv2_x
  macs += conv_macs(38, 3, 64, 128) + conv_macs(38, 3, 128, 128) + conv_macs(38, 1, 64, 128);
  macs += 3 * 2 * conv_macs(38, 3, 128, 128);  // conv3_x
  macs += conv_macs(38, 3, 128, 256) + conv_macs(38, 3, 256, 256) + conv_macs(38, 1, 128, 256);
  macs += 5 * 2 * conv_macs(38, 3, 256, 256);  // conv4_x
  double backbone = 0;
  for (int v = 0; v < g.size(); ++v) {
    const OpNode& n = g.node(v);
    if (n.phase == Phase::Forward &&
        (n.name.rfind("stem.", 0) == 0 || n.name.rfind("backbone.", 0) == 0))
      backbone += n.flops;
  }
  CHECK(backbone == Approx(2 * macs).epsilon(1e-12));
}

TEST_CASE("SSD300 has six feature maps 38 19 10 5 3 1 and 8732 default boxes") {
  CHECK(ssd_feature_map_sizes(300) == std::vector<std::int64_t>{38, 19, 10, 5, 3, 1});
  CHECK(ssd_default_boxes(300) == 8732);
  auto cfg = model_study("ssd", "2x2", 8);
  const OpGraph g = graph_of(cfg, 2);
  const std::int64_t sizes[] = {38, 19, 10, 5, 3, 1}, boxes[] = {4, 6, 6, 6, 4, 4};
  for (int i = 0; i < 6; ++i) {
    const OpNode* cls = node_named(g, "head." + std::to_string(i) + ".class");
    REQUIRE(cls);
    CHECK(cls->conv->out_height == sizes[i]);
    CHECK(cls->conv->out_channels == boxes[i] * 81);
  }
  CHECK(node_named(g, "loss.per_box")->shapes[0] == std::vector<std::int64_t>{2, 8732, 85});
}

TEST_CASE("Mask R-CNN: FPN levels, shared RPN weights, fixed ROI counts") {
  auto cfg = model_study("maskrcnn", "2x2", 8);
  const OpGraph g = graph_of(cfg, 2);
  const std::int64_t heights[] = {208, 104, 52, 26};
  for (int l = 0; l < 4; ++l)
    CHECK(node_named(g, "fpn.p" + std::to_string(l + 2) + ".output")->conv->out_height ==
          heights[l]);
  CHECK(node_named(g, "rpn.p6.conv")->conv->out_height == 13);
  CHECK(node_named(g, "rpn.p3.conv")->tied_to >= 0);
  CHECK(node_named(g, "rpn.p3.conv")->params == 0);
  CHECK(node_named(g, "box_head.fc1")->matmul->m == 2 * 512);
  CHECK(node_named(g, "mask_head.conv0")->matmul->m == 2 * 128 * 14 * 14);
  // Head FLOPs from their layer shapes (2 images): 512 ROIs through FC 7*7*256 -> 1024, and 128
  // ROIs through a 3x3 conv 256 -> 256 on 14x14 and the 2x2 deconvolution to 28x28.
  CHECK(node_named(g, "box_head.fc1")->flops == 2.0 * 2 * 512 * 7 * 7 * 256 * 1024);
  CHECK(node_named(g, "mask_head.conv0")->flops == 2.0 * 2 * 128 * 14 * 14 * 9 * 256 * 256);
  CHECK(node_named(g, "mask_head.deconv")->flops == 2.0 * 2 * 128 * 14 * 14 * 4 * 256 * 256);
  CHECK(node_named(g, "mask_head.mask_logits")->flops ==
        2.0 * 2 * 128 * 28 * 28 * 256 * cfg.integer("workload.classes"));
  // Proposals are stop-gradient: no backward op of theirs exists.
  CHECK(node_named(g, "proposals.p2.nms.tile0.iou.bwd") == nullptr);
  CHECK(node_named(g, "box_head.roi_align.p2.rows.bwd_input_b") != nullptr);
}

TEST_CASE("convolutional programs stay compact") {
  for (const char* model : {"resnet50", "ssd", "maskrcnn"}) {
    auto cfg = model_study(model, "2x2", 8);
    const OpGraph g = graph_of(cfg, 1);
    INFO(model);
    CHECK(g.size() > 300);
    CHECK(g.size() < 3000);
  }
}
