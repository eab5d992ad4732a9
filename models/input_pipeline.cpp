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
// The infeed bytes of an example come from the builders (OpGraph::infeed_bytes_per_example).
// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kInputPipelineParams{{
    {"workload.host_examples_per_s", T::Number, "examples/s", 48000.0, "examples one host preprocesses per second (tpusim train); an assumption, docs/train.md", 1e-9, 1e12, {}, "workload.model", "bert_large"},
    {"workload.host_examples_per_s", T::Number, "examples/s", 96000.0, "examples one host preprocesses per second (tpusim train); an assumption, docs/train.md", 1e-9, 1e12, {}, "workload.model", "transformer_big"},
    {"workload.host_examples_per_s", T::Number, "examples/s", 9600.0, "examples one host preprocesses per second (tpusim train); an assumption, docs/train.md", 1e-9, 1e12, {}, "workload.model", "resnet50"},
    {"workload.host_examples_per_s", T::Number, "examples/s", 4800.0, "examples one host preprocesses per second (tpusim train); an assumption, docs/train.md", 1e-9, 1e12, {}, "workload.model", "ssd"},
    {"workload.host_examples_per_s", T::Number, "examples/s", 960.0, "examples one host preprocesses per second (tpusim train); an assumption, docs/train.md", 1e-9, 1e12, {}, "workload.model", "maskrcnn"},
}};
// clang-format on

}  // namespace

double host_examples_per_s(const Config& cfg) { return cfg.number("workload.host_examples_per_s"); }

}  // namespace tpusim
