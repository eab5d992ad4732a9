#include "models/input_pipeline.hpp"

#include "core/params.hpp"

namespace tpusim {
namespace {
using T = ParamType;

// Preprocessing rates: ASSUMPTIONS, not measurements (no public log gives a host's rate). Each is
// 96 host vCPUs (a Cloud TPU v3 host) divided by an assumed CPU time per example: BERT 2 ms
// (parse a pre-masked TFRecord), Transformer 1 ms (parse packed token ids), ResNet-50 10 ms
// (JPEG decode, random crop, flip, resize), SSD 20 ms (decode, random crop of up to 50 tries,
// colour jitter, match 8732 default boxes), Mask R-CNN 100 ms (decode, resize to 800x1333, pad,
// anchor targets for 279279 anchors, 100 mask crops). Each is above the lower bound the
// MLPerf v0.6 16-chip runs imply (a run that was not input-bound fed at least its own rate).
// Infeed bytes: the input tensors of one example as the TPU code feeds them (docs/train.md).
// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kParams{{
    {"workload.host_examples_per_s", T::Number, "examples/s", 48000.0, "examples one host preprocesses per second (tpusim train); an assumption, docs/train.md", 1e-9, 1e12, {}, "workload.model", "bert_large"},
    {"workload.host_examples_per_s", T::Number, "examples/s", 96000.0, "examples one host preprocesses per second (tpusim train); an assumption, docs/train.md", 1e-9, 1e12, {}, "workload.model", "transformer_big"},
    {"workload.host_examples_per_s", T::Number, "examples/s", 9600.0, "examples one host preprocesses per second (tpusim train); an assumption, docs/train.md", 1e-9, 1e12, {}, "workload.model", "resnet50"},
    {"workload.host_examples_per_s", T::Number, "examples/s", 4800.0, "examples one host preprocesses per second (tpusim train); an assumption, docs/train.md", 1e-9, 1e12, {}, "workload.model", "ssd"},
    {"workload.host_examples_per_s", T::Number, "examples/s", 960.0, "examples one host preprocesses per second (tpusim train); an assumption, docs/train.md", 1e-9, 1e12, {}, "workload.model", "maskrcnn"},
    // 512 x 3 int32 (ids, mask, segment) + 76 x 3 x 4 (masked positions, ids, weights) + label.
    {"workload.infeed_bytes_per_example", T::Number, "bytes", 7060.0, "infeed bytes of one example (tpusim train)", 0, 1e12, {}, "workload.model", "bert_large"},
    // Source and target: 256 x 3 int32 (tokens, segment, position) each.
    {"workload.infeed_bytes_per_example", T::Number, "bytes", 6144.0, "infeed bytes of one example (tpusim train)", 0, 1e12, {}, "workload.model", "transformer_big"},
    // 224 x 224 x 3 bf16 image + int32 label.
    {"workload.infeed_bytes_per_example", T::Number, "bytes", 301060.0, "infeed bytes of one example (tpusim train)", 0, 1e12, {}, "workload.model", "resnet50"},
    // 300 x 300 x 3 bf16 image + 8732 x (4 box f32 + class int32) + count.
    {"workload.infeed_bytes_per_example", T::Number, "bytes", 714644.0, "infeed bytes of one example (tpusim train)", 0, 1e12, {}, "workload.model", "ssd"},
    // [416*672, 12] bf16 image + 100 masks 116 x 116 f32 + 279279 anchors x (score + 4 box) f32
    // + 100 boxes x (4 + class) (shared reference detection-on-tpu.md).
    {"workload.infeed_bytes_per_example", T::Number, "bytes", 17679228.0, "infeed bytes of one example (tpusim train)", 0, 1e12, {}, "workload.model", "maskrcnn"},
}};
// clang-format on

}  // namespace

InputPipeline read_input_pipeline(const Config& cfg) {
  return {cfg.number("workload.host_examples_per_s"),
          cfg.number("workload.infeed_bytes_per_example")};
}

}  // namespace tpusim
