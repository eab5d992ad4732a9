#include "models/input_pipeline.hpp"

#include "core/params.hpp"

namespace tpusim {
namespace {
using T = ParamType;

// Per-unit CPU costs: MEASURED on this machine on 2026-12-02 with
// `build/bin/tpusim_host_ops_bench --rounds 15` (tools/bench/host_ops.cpp, Release build:
// libjpeg-turbo 2.1.5 for the decode, plain C++ for the rest, one thread). /proc/cpuinfo: "Intel(R)
// Xeon(R) Processor", family 6 model 167, 2000 MHz, AVX-512; 2 vCPUs shared with other builds
// (load average 2.7 to 3.3). Each default is the median over three runs of the fastest of 15
// rounds (docs/train.md has the output). The same costs serve every model: the pipelines differ in
// their operations and sizes, not in the cost of a pixel.
// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kInputPipelineParams{{
    {"hardware.host.cost.jpeg_decode_ns_per_pixel", T::Number, "ns", 5.0, "host CPU time to decode one pixel of a JPEG image (libjpeg-turbo, 640x480 at quality 90; tools/bench/host_ops.cpp)", 0, 1e9},
    {"hardware.host.cost.resize_ns_per_pixel", T::Number, "ns", 14.4, "host CPU time per output pixel of a bilinear RGB resize to float", 0, 1e9},
    {"hardware.host.cost.flip_ns_per_pixel", T::Number, "ns", 1.2, "host CPU time per pixel of a horizontal flip of an RGB float image", 0, 1e9},
    {"hardware.host.cost.color_jitter_ns_per_pixel", T::Number, "ns", 10.3, "host CPU time per pixel of colour jitter (brightness, contrast, saturation, hue) of an RGB float image", 0, 1e9},
    {"hardware.host.cost.normalize_ns_per_pixel", T::Number, "ns", 3.5, "host CPU time per pixel to normalise an RGB float image (mean, standard deviation) to bf16", 0, 1e9},
    {"hardware.host.cost.mask_crop_ns_per_pixel", T::Number, "ns", 5.5, "host CPU time per output pixel of a ground-truth mask cropped and resized (bilinear, one channel)", 0, 1e9},
    {"hardware.host.cost.iou_ns_per_pair", T::Number, "ns", 7.2, "host CPU time per IoU of a ground-truth box with an anchor (or crop), with the argmax over boxes", 0, 1e9},
    {"hardware.host.cost.box_encode_ns_per_anchor", T::Number, "ns", 11.1, "host CPU time to encode the box target of one anchor (centre offsets, log sizes)", 0, 1e9},
    {"hardware.host.cost.record_parse_ns_per_byte", T::Number, "ns", 4.0, "host CPU time per byte of a record parsed (varint features, CRC check)", 0, 1e9},
    {"hardware.host.cost.pack_ns_per_token", T::Number, "ns", 4.7, "host CPU time per token packed into fixed-length rows (tokens, segment ids, positions)", 0, 1e9},
    {"workload.input.cached_decode", T::Boolean, "", false, "what-if: decoded images come from a cache, so the host pipeline does not decode JPEGs (the paper's caching of decoded data)", -kInf, kInf},
    {"workload.input.device_box_matching", T::Boolean, "", false, "what-if: anchor matching and box encoding run on the device, not on the host (their device cost is not modelled)", -kInf, kInf},
}};
// clang-format on

// Sizes of one example (ASSUMPTIONS where no reference page gives them; docs/train.md):
// ImageNet's mean training image is about 469 x 387 pixels (the figure commonly given for
// ILSVRC-2012; not in the reference pages); COCO's in input_pipeline.hpp.
constexpr double kInputPipelineImagenetPixels = 469.0 * 387.0;
constexpr double kInputPipelineCocoPixels = kCocoImagePixels;
constexpr double kInputPipelineCocoBoxes = kCocoBoxesPerImage;
// SSD: 8732 default boxes (docs/cnn.md); up to 50 random-crop tries, each testing the crop's
// IoU against every box (the MLPerf v0.7 code; all 50 taken: the worst case).
constexpr double kInputPipelineSsdAnchors = 8732;
constexpr double kInputPipelineSsdCropTries = 50;
// Mask R-CNN: 279,279 anchors at 832 x 1344 (docs/detection.md); a 640 x 480 image resized to
// short side 800 is 1067 x 800.
constexpr double kInputPipelineMaskrcnnAnchors = 279279;
constexpr double kInputPipelineMaskrcnnResized = 1067.0 * 800.0;

struct PipelineBuilder {
  const Config& cfg;
  InputPipeline p;
  void add(const char* name, const char* cost, const char* unit, double units) {
    const std::string path = std::string("hardware.host.cost.") + cost;
    p.ops.push_back({name, path, unit, units, cfg.number(path)});
  }
  void decode(double pixels) {
    if (!cfg.boolean("workload.input.cached_decode"))
      add("jpeg_decode", "jpeg_decode_ns_per_pixel", "decoded pixels", pixels);
  }
  void match(double box_anchor_pairs, double anchors) {
    if (cfg.boolean("workload.input.device_box_matching")) return;
    add("anchor_matching", "iou_ns_per_pair", "box x anchor pairs", box_anchor_pairs);
    add("box_encoding", "box_encode_ns_per_anchor", "anchors", anchors);
  }
};

void resnet50_pipeline(PipelineBuilder& b) {
  const double out = static_cast<double>(b.cfg.integer("workload.image_size"));
  b.decode(kInputPipelineImagenetPixels);
  b.add("resize", "resize_ns_per_pixel", "output pixels", out * out);
  b.add("flip", "flip_ns_per_pixel", "pixels", out * out);
  b.add("normalize", "normalize_ns_per_pixel", "pixels", out * out);
}

void ssd_pipeline(PipelineBuilder& b) {
  const double out = static_cast<double>(b.cfg.integer("workload.image_size"));
  b.decode(kInputPipelineCocoPixels);
  b.add("random_crop", "iou_ns_per_pair", "crop tries x boxes",
        kInputPipelineSsdCropTries * kInputPipelineCocoBoxes);
  b.add("resize", "resize_ns_per_pixel", "output pixels", out * out);
  b.add("flip", "flip_ns_per_pixel", "pixels", out * out);
  b.add("color_jitter", "color_jitter_ns_per_pixel", "pixels", out * out);
  b.match(kInputPipelineCocoBoxes * kInputPipelineSsdAnchors, kInputPipelineSsdAnchors);
}

void maskrcnn_pipeline(PipelineBuilder& b) {
  const double padded = static_cast<double>(b.cfg.integer("workload.image_height")) *
                        static_cast<double>(b.cfg.integer("workload.image_width"));
  const double mask = static_cast<double>(b.cfg.integer("workload.gt_mask_pixels"));
  b.decode(kInputPipelineCocoPixels);
  b.add("flip", "flip_ns_per_pixel", "pixels", kInputPipelineCocoPixels);
  b.add("resize", "resize_ns_per_pixel", "output pixels", kInputPipelineMaskrcnnResized);
  b.add("normalize_pad", "normalize_ns_per_pixel", "padded pixels", padded);
  b.match(kInputPipelineCocoBoxes * kInputPipelineMaskrcnnAnchors, kInputPipelineMaskrcnnAnchors);
  b.add("mask_crop", "mask_crop_ns_per_pixel", "mask pixels",
        kInputPipelineCocoBoxes * mask * mask);
}

// Evaluation examples (the timed-run reference page: ResNet-50's eval images are decoded and
// centre-cropped; Mask R-CNN's resized and padded to the eval size). No random augmentation and
// no training targets: the metric compares the detections with the annotations on the host, so
// SSD and Mask R-CNN match no anchors and crop no masks. The crop of ResNet-50's centre and the
// resizes cost their output pixels, as in training.
void resnet50_eval_pipeline(PipelineBuilder& b) {
  const double out = static_cast<double>(b.cfg.integer("workload.image_size"));
  b.decode(kInputPipelineImagenetPixels);
  b.add("center_crop_resize", "resize_ns_per_pixel", "output pixels", out * out);
  b.add("normalize", "normalize_ns_per_pixel", "pixels", out * out);
}

void ssd_eval_pipeline(PipelineBuilder& b) {
  const double out = static_cast<double>(b.cfg.integer("workload.image_size"));
  b.decode(kInputPipelineCocoPixels);
  b.add("resize", "resize_ns_per_pixel", "output pixels", out * out);
}

void maskrcnn_eval_pipeline(PipelineBuilder& b) {
  const double padded = static_cast<double>(b.cfg.integer("workload.image_height")) *
                        static_cast<double>(b.cfg.integer("workload.image_width"));
  b.decode(kInputPipelineCocoPixels);
  b.add("resize", "resize_ns_per_pixel", "output pixels", kInputPipelineMaskrcnnResized);
  b.add("normalize_pad", "normalize_ns_per_pixel", "padded pixels", padded);
}

}  // namespace

double InputPipeline::ns_per_example() const {
  double ns = 0;
  for (const PipelineOp& op : ops) ns += op.ns();
  return ns;
}

InputPipeline input_pipeline(const Config& cfg, double record_bytes, PipelinePass pass) {
  PipelineBuilder b{cfg, {}};
  const std::string model = cfg.string("workload.model");
  const bool eval = pass == PipelinePass::Eval;
  if (model == "resnet50") {
    eval ? resnet50_eval_pipeline(b) : resnet50_pipeline(b);
  } else if (model == "ssd") {
    eval ? ssd_eval_pipeline(b) : ssd_pipeline(b);
  } else if (model == "maskrcnn") {
    eval ? maskrcnn_eval_pipeline(b) : maskrcnn_pipeline(b);
  } else {
    // Pre-tokenised records read and batched (BERT, the decoder-only LM); the Transformer packs
    // its training sentences into rows of workload.seq_len tokens, inputs and targets (its eval
    // sentences are decoded one by one: not packed).
    b.add("record_parse", "record_parse_ns_per_byte", "record bytes", record_bytes);
    if (model == "transformer_big" && !eval)
      b.add("packing", "pack_ns_per_token", "tokens",
            2.0 * static_cast<double>(cfg.integer("workload.seq_len")));
  }
  return std::move(b.p);
}

}  // namespace tpusim
