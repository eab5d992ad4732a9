// Mask R-CNN's first stage: ResNet-50 C2..C5, FPN and the RPN head (maskrcnn_parts.hpp).
#include "models/builders/maskrcnn_parts.hpp"
#include "models/ops.hpp"

namespace tpusim {
namespace {

// A later level's RPN op uses the first level's weights.
void tie(OpGraph& g, int op, int owner) {
  g.node(op).params = 0;
  g.node(op).tied_to = owner;
}

}  // namespace

MaskRcnnFeatures add_maskrcnn_backbone(OpGraph& g, CnnBlocks& b, const MaskRcnnDims& d,
                                       std::int64_t batch) {
  // The host delivers the image space-to-depth 2 ([B, 416, 672, 12] at 832 x 1344); the 7x7/2
  // kernel is re-laid-out as a 4x4 stride-1 conv over 12 channels.
  MapRef x = b.stem({batch, d.height, d.width, 3}, 2);
  const std::int64_t blocks[] = {3, 4, 6, 3}, widths[] = {64, 128, 256, 512};
  std::vector<MapRef> c;
  for (int stage = 0; stage < 4; ++stage) {
    for (std::int64_t i = 0; i < blocks[stage]; ++i)
      x = b.bottleneck("backbone.stage" + std::to_string(stage + 1) + "." + std::to_string(i), x,
                       widths[stage], i == 0 && stage > 0 ? 2 : 1);
    c.push_back(x);
    // conv0 and res2 are not trained (their variables are removed from training): no weight
    // gradient, and since nothing before them learns, no input gradient either.
    if (stage == 0)
      for (int v = 0; v < g.size(); ++v) g.node(v).params = 0;
  }

  MaskRcnnFeatures f;
  std::vector<MapRef> lateral(4);
  f.levels.resize(5);
  for (int l = 3; l >= 0; --l) {
    const std::string n = "fpn.p" + std::to_string(l + 2);
    lateral[l] = b.conv(n + ".lateral", c[l], kMaskRcnnFpn, 1, 1);
    // Nearest 2x upsampling as a broadcast multiply, fused into the add.
    if (l < 3)
      lateral[l] = b.elementwise(n + ".topdown_add", {lateral[l].op, lateral[l + 1].op},
                                 lateral[l].map, vpu_ops::kUpsampleAdd, vpu_ops::kUpsampleAdd);
  }
  for (int l = 0; l < 4; ++l)
    f.levels[l] =
        b.conv("fpn.p" + std::to_string(l + 2) + ".output", lateral[l], kMaskRcnnFpn, 3, 1);
  f.levels[4] = b.max_pool("fpn.p6", f.levels[3], 1, 2);  // a stride-2 subsample of P5

  // RPN head, weights shared over the levels (levels 1..4 tied to level 0).
  int shared[3] = {-1, -1, -1};
  for (int l = 0; l < 5; ++l) {
    const std::string n = "rpn.p" + std::to_string(l + 2);
    MapRef t = b.conv(n + ".conv", f.levels[l], kMaskRcnnFpn, 3, 1);
    g.node(t.op).vpu_ops_per_element += vpu_ops::kRelu;
    g.node(t.op).bwd_vpu_ops_per_element += vpu_ops::kReluGrad;
    const MapRef score = b.conv(n + ".objectness", t, kMaskRcnnAnchors, 1, 1);
    const MapRef box = b.conv(n + ".box", t, kMaskRcnnAnchors * 4, 1, 1);
    const int ops[3] = {t.op, score.op, box.op};
    for (int k = 0; k < 3; ++k) {
      if (l == 0)
        shared[k] = ops[k];
      else
        tie(g, ops[k], shared[k]);
    }
    f.rpn_out.push_back(score.op);
    f.rpn_out.push_back(box.op);
    f.anchors.push_back(f.levels[l].map.height * f.levels[l].map.width * kMaskRcnnAnchors);
  }
  return f;
}

}  // namespace tpusim
