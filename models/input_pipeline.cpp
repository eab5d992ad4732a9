#include "models/input_pipeline.hpp"

#include "core/params.hpp"
#include "models/model_builder.hpp"

namespace tpusim {

// Per-unit CPU costs: MEASURED on this machine on 2026-12-02 with
// `build/bin/tpusim_host_ops_bench --rounds 15` (tools/bench/host_ops.cpp, Release build:
// libjpeg-turbo 2.1.5 for the decode, plain C++ for the rest, one thread). /proc/cpuinfo: "Intel(R)
// Xeon(R) Processor", family 6 model 167, 2000 MHz, AVX-512; 2 vCPUs shared with other builds
// (load average 2.7 to 3.3). Each default is the median over three runs of the fastest of 15
// rounds (docs/train.md has the output). The same costs serve every model: the pipelines differ in
// their operations and sizes, not in the cost of a pixel.
// One parameter per line reads as a table.
// clang-format off
namespace host_cost {
using T = ParamType;
const Param<double> kJpegDecode{{"hardware.host.cost.jpeg_decode_ns_per_pixel", T::Number, "ns", 5.0, "host CPU time to decode one pixel of a JPEG image (libjpeg-turbo, 640x480 at quality 90; tools/bench/host_ops.cpp)", 0, 1e9}};
const Param<double> kResize{{"hardware.host.cost.resize_ns_per_pixel", T::Number, "ns", 14.4, "host CPU time per output pixel of a bilinear RGB resize to float", 0, 1e9}};
const Param<double> kFlip{{"hardware.host.cost.flip_ns_per_pixel", T::Number, "ns", 1.2, "host CPU time per pixel of a horizontal flip of an RGB float image", 0, 1e9}};
const Param<double> kColorJitter{{"hardware.host.cost.color_jitter_ns_per_pixel", T::Number, "ns", 10.3, "host CPU time per pixel of colour jitter (brightness, contrast, saturation, hue) of an RGB float image", 0, 1e9}};
const Param<double> kNormalize{{"hardware.host.cost.normalize_ns_per_pixel", T::Number, "ns", 3.5, "host CPU time per pixel to normalise an RGB float image (mean, standard deviation) to bf16", 0, 1e9}};
const Param<double> kMaskCrop{{"hardware.host.cost.mask_crop_ns_per_pixel", T::Number, "ns", 5.5, "host CPU time per output pixel of a ground-truth mask cropped and resized (bilinear, one channel)", 0, 1e9}};
const Param<double> kIou{{"hardware.host.cost.iou_ns_per_pair", T::Number, "ns", 7.2, "host CPU time per IoU of a ground-truth box with an anchor (or crop), with the argmax over boxes", 0, 1e9}};
const Param<double> kBoxEncode{{"hardware.host.cost.box_encode_ns_per_anchor", T::Number, "ns", 11.1, "host CPU time to encode the box target of one anchor (centre offsets, log sizes)", 0, 1e9}};
const Param<double> kRecordParse{{"hardware.host.cost.record_parse_ns_per_byte", T::Number, "ns", 4.0, "host CPU time per byte of a record parsed (varint features, CRC check)", 0, 1e9}};
const Param<double> kPack{{"hardware.host.cost.pack_ns_per_token", T::Number, "ns", 4.7, "host CPU time per token packed into fixed-length rows (tokens, segment ids, positions)", 0, 1e9}};
}  // namespace host_cost

namespace {
using T = ParamType;
const Param<bool> kCachedDecode{{"workload.input.cached_decode", T::Boolean, "", false, "what-if: decoded images come from a cache, so the host pipeline does not decode JPEGs (the paper's caching of decoded data)", -kInf, kInf}};
const Param<bool> kDeviceBoxMatching{{"workload.input.device_box_matching", T::Boolean, "", false, "what-if: anchor matching and box encoding run on the device, not on the host (their device cost is not modelled)", -kInf, kInf}};
}  // namespace
// clang-format on

double InputPipeline::ns_per_example() const {
  double ns = 0;
  for (const PipelineOp& op : ops) ns += op.ns();
  return ns;
}

void PipelineBuilder::add(const char* name, const Param<double>& cost, const char* unit,
                          double units) {
  p_.ops.push_back({name, cost.path(), unit, units, cost(cfg_)});
}

void PipelineBuilder::decode(double pixels) {
  if (!kCachedDecode(cfg_)) add("jpeg_decode", host_cost::kJpegDecode, "decoded pixels", pixels);
}

void PipelineBuilder::match(double box_anchor_pairs, double anchors) {
  if (kDeviceBoxMatching(cfg_)) return;
  add("anchor_matching", host_cost::kIou, "box x anchor pairs", box_anchor_pairs);
  add("box_encoding", host_cost::kBoxEncode, "anchors", anchors);
}

void PipelineBuilder::parse_record() {
  add("record_parse", host_cost::kRecordParse, "record bytes", record_bytes_);
}

InputPipeline input_pipeline(const Config& cfg, double record_bytes, PipelinePass pass) {
  PipelineBuilder b(cfg, record_bytes);
  model_builder_for(cfg)->input_pipeline(b, cfg, pass);
  return b.take();
}

}  // namespace tpusim
