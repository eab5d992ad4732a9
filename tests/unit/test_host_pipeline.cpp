// The hosts' chip blocks (topologies/host_blocks.hpp) and the input pipelines' operations
// (models/input_pipeline.hpp), each against its closed form from the parameters.
#include <catch2/catch.hpp>
#include <cmath>
#include <tuple>

#include "core/errors.hpp"
#include "models/input_pipeline.hpp"
#include "tests/unit/model_study.hpp"
#include "topologies/host_blocks.hpp"

using namespace tpusim;

namespace {
Topology host_pipeline_grid(const std::string& text) { return Topology(parse_topology(text)); }

const PipelineOp* host_pipeline_op(const InputPipeline& p, const std::string& name) {
  for (const PipelineOp& op : p.ops)
    if (op.name == name) return &op;
  return nullptr;
}
}  // namespace

TEST_CASE("host blocks: 4x2 chips per host, 512 hosts on the 128x32 Multipod") {
  const Topology multipod = host_pipeline_grid("128x32:wrap=0,1");
  const HostBlocks h = host_blocks(multipod, {4, 2});
  CHECK(h.chips.size() == 128u / 4 * (32 / 2));
  CHECK(h.chips.size() == 512u);
  CHECK(h.chips_per_host() == 8);
  CHECK(h.describe() == "4x2 chips per host");
  // The host of chip (x, y) is block (x / 4, y / 2), numbered X fastest.
  for (int c = 0; c < multipod.num_chips(); ++c) {
    const int x = multipod.coord(c, 0), y = multipod.coord(c, 1);
    CHECK(h.host_of_chip[c] == x / 4 + (y / 2) * (128 / 4));
  }
  // Every host's chips are a 4x2 rectangle of the grid.
  for (const auto& chips : h.chips) {
    REQUIRE(chips.size() == 8u);
    const int x0 = multipod.coord(chips[0], 0), y0 = multipod.coord(chips[0], 1);
    CHECK(x0 % 4 == 0);
    CHECK(y0 % 2 == 0);
    for (int c : chips) {
      CHECK(multipod.coord(c, 0) - x0 < 4);
      CHECK(multipod.coord(c, 1) - y0 < 2);
    }
  }
}

TEST_CASE("host blocks: smaller grids clip the block, grids it does not tile are refused") {
  // A 2x2 slice: the block clipped to 2x2, one host of 4 chips.
  const HostBlocks small = host_blocks(host_pipeline_grid("2x2"), {4, 2});
  CHECK(small.chips.size() == 1u);
  CHECK(small.extent == std::vector<int>{2, 2});
  // 4x4: two hosts of 4x2; a pod (32x32): 8 x 16 = 128 hosts.
  CHECK(host_blocks(host_pipeline_grid("4x4"), {4, 2}).chips.size() == 2u);
  CHECK(host_blocks(host_pipeline_grid("32x32"), {4, 2}).chips.size() == 128u);
  // A 3D grid: dimensions the block does not name get extent 1 (4x2x1).
  const HostBlocks cube = host_blocks(host_pipeline_grid("8x8x8"), {4, 2});
  CHECK(cube.extent == std::vector<int>{4, 2, 1});
  CHECK(cube.chips.size() == 8u / 4 * (8 / 2) * 8);
  // 6 chips along X are not a multiple of 4: an error naming the path and the grid.
  try {
    host_blocks(host_pipeline_grid("6x4"), {4, 2});
    FAIL("6x4 accepted");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("hardware.host.chip_block"));
    CHECK_THAT(e.what(), Catch::Contains("6"));
  }
  CHECK_THROWS_AS(host_blocks(host_pipeline_grid("4x4"), {4, 2, 2}), ConfigError);
}

TEST_CASE("input pipelines: every operation costs its size times its per-unit cost") {
  const double imagenet = 469.0 * 387, coco = 640.0 * 480, boxes = 860001.0 / 118287;
  struct Expected {
    std::string op;
    double units;
  };
  auto check = [](const Config& cfg, const InputPipeline& p, const std::vector<Expected>& want) {
    REQUIRE(p.ops.size() == want.size());
    double sum = 0;
    for (const Expected& w : want) {
      CAPTURE(w.op);
      const PipelineOp* op = host_pipeline_op(p, w.op);
      REQUIRE(op);
      CHECK(op->units == Approx(w.units));
      CHECK(op->ns_per_unit == cfg.number(op->cost_path));
      CHECK(op->ns() == Approx(w.units * cfg.number(op->cost_path)));
      sum += w.units * cfg.number(op->cost_path);
    }
    CHECK(p.ns_per_example() == Approx(sum));
  };

  const Config resnet = test::model_study("resnet50", "2x2", 16);
  const double r = static_cast<double>(resnet.integer("workload.image_size"));
  check(resnet, input_pipeline(resnet, 0),
        {{"jpeg_decode", imagenet}, {"resize", r * r}, {"flip", r * r}, {"normalize", r * r}});

  const Config ssd = test::model_study("ssd", "2x2", 16);
  const double s = static_cast<double>(ssd.integer("workload.image_size"));
  check(ssd, input_pipeline(ssd, 0),
        {{"jpeg_decode", coco},
         {"random_crop", 50 * boxes},
         {"resize", s * s},
         {"flip", s * s},
         {"color_jitter", s * s},
         {"anchor_matching", boxes * 8732},
         {"box_encoding", 8732}});

  const Config mask = test::model_study("maskrcnn", "2x2", 8);
  const double padded = static_cast<double>(mask.integer("workload.image_height")) *
                        static_cast<double>(mask.integer("workload.image_width"));
  const double m = static_cast<double>(mask.integer("workload.gt_mask_pixels"));
  check(mask, input_pipeline(mask, 0),
        {{"jpeg_decode", coco},
         {"flip", coco},
         {"resize", 1067.0 * 800},
         {"normalize_pad", padded},
         {"anchor_matching", boxes * 279279},
         {"box_encoding", 279279},
         {"mask_crop", boxes * m * m}});

  const Config bert = test::model_study("bert_large", "2x2", 8);
  check(bert, input_pipeline(bert, 7060), {{"record_parse", 7060}});
  const Config transformer = test::model_study("transformer_big", "2x2", 16);
  const double seq = static_cast<double>(transformer.integer("workload.seq_len"));
  check(transformer, input_pipeline(transformer, 6 * seq * 4),
        {{"record_parse", 6 * seq * 4}, {"packing", 2 * seq}});
}

TEST_CASE("input pipelines: evaluation examples are decoded and sized only") {
  const double imagenet = 469.0 * 387, coco = 640.0 * 480;
  auto ops = [](const InputPipeline& p) {
    std::vector<std::pair<std::string, double>> v;
    for (const PipelineOp& op : p.ops) {
      CHECK(op.ns() == Approx(op.units * op.ns_per_unit));
      v.emplace_back(op.name, op.units);
    }
    return v;
  };
  using V = std::vector<std::pair<std::string, double>>;
  const Config resnet = test::model_study("resnet50", "2x2", 16);
  const double r = static_cast<double>(resnet.integer("workload.image_size"));
  CHECK(ops(input_pipeline(resnet, 0, PipelinePass::Eval)) ==
        V{{"jpeg_decode", imagenet}, {"center_crop_resize", r * r}, {"normalize", r * r}});
  const Config ssd = test::model_study("ssd", "2x2", 16);
  const double s = static_cast<double>(ssd.integer("workload.image_size"));
  CHECK(ops(input_pipeline(ssd, 0, PipelinePass::Eval)) ==
        V{{"jpeg_decode", coco}, {"resize", s * s}});
  const Config mask = test::model_study("maskrcnn", "2x2", 8);
  const double padded = static_cast<double>(mask.integer("workload.image_height")) *
                        static_cast<double>(mask.integer("workload.image_width"));
  CHECK(ops(input_pipeline(mask, 0, PipelinePass::Eval)) ==
        V{{"jpeg_decode", coco}, {"resize", 1067.0 * 800}, {"normalize_pad", padded}});
  // Records: parsed at the eval program's record size; the Transformer packs only training rows.
  const Config transformer = test::model_study("transformer_big", "2x2", 16);
  CHECK(ops(input_pipeline(transformer, 400, PipelinePass::Eval)) == V{{"record_parse", 400}});
  // The cached-decode what-if drops the decode here too.
  const Config cached =
      test::model_study("ssd", "2x2", 16, {}, {{"input", {{"cached_decode", true}}}});
  CHECK(ops(input_pipeline(cached, 0, PipelinePass::Eval)) == V{{"resize", s * s}});
}

TEST_CASE("input pipelines: the what-ifs drop exactly their operations") {
  const Config ssd = test::model_study("ssd", "2x2", 16);
  const InputPipeline full = input_pipeline(ssd, 0);
  const Config cached =
      test::model_study("ssd", "2x2", 16, {}, {{"input", {{"cached_decode", true}}}});
  const InputPipeline no_decode = input_pipeline(cached, 0);
  CHECK(host_pipeline_op(no_decode, "jpeg_decode") == nullptr);
  CHECK(no_decode.ns_per_example() ==
        Approx(full.ns_per_example() - host_pipeline_op(full, "jpeg_decode")->ns()));
  const Config device =
      test::model_study("ssd", "2x2", 16, {}, {{"input", {{"device_box_matching", true}}}});
  const InputPipeline on_device = input_pipeline(device, 0);
  CHECK(host_pipeline_op(on_device, "anchor_matching") == nullptr);
  CHECK(on_device.ns_per_example() ==
        Approx(full.ns_per_example() - host_pipeline_op(full, "anchor_matching")->ns() -
               host_pipeline_op(full, "box_encoding")->ns()));
  // A cost parameter scales its operations alone: twice the decode cost adds one decode.
  const Config slow =
      load_config({{"topology", "2x2"},
                   {"workload", {{"model", "ssd"}, {"global_batch", 16}}},
                   {"hardware",
                    {{"host",
                      {{"cost",
                        {{"jpeg_decode_ns_per_pixel",
                          2 * ssd.number("hardware.host.cost.jpeg_decode_ns_per_pixel")}}}}}}}});
  CHECK(input_pipeline(slow, 0).ns_per_example() ==
        Approx(full.ns_per_example() + host_pipeline_op(full, "jpeg_decode")->ns()));
}

namespace {
const MetricOp* host_metric_op(const EvalMetric& m, const std::string& name) {
  for (const MetricOp& op : m.ops)
    if (op.name == name) return &op;
  return nullptr;
}

/// Each of `want` (name, units over the evaluation, per example or the coordinator's) is an op of
/// `m` costing its units times its per-unit cost, and there are no others.
void check_metric(const Config& cfg, const EvalMetric& m,
                  const std::vector<std::tuple<std::string, double, bool>>& want) {
  REQUIRE(m.ops.size() == want.size());
  double busiest = 0;
  for (const auto& [name, units, per_example] : want) {
    CAPTURE(name);
    const MetricOp* op = host_metric_op(m, name);
    REQUIRE(op);
    CHECK(op->units == Approx(units));
    CHECK(op->per_example == per_example);
    CHECK(op->ns() == Approx(units * cfg.number(op->cost_path)));
    busiest += op->ns() / (per_example ? m.hosts : 1);
  }
  CHECK(m.busiest_host_ns() == Approx(busiest));
}

Config metric_study(const std::string& model, long long batch, const std::string& on) {
  Config cfg = test::model_study(model, "2x2", batch);
  nlohmann::json j = cfg.json();
  j["train"]["eval_metric_on"] = on;
  return load_config(j);
}
}  // namespace

TEST_CASE("eval metrics: COCO mAP and BLEU operations cost their size times their unit cost") {
  const double g = 860001.0 / 118287, images = 5000;
  // COCOeval of one kind over E images of D detections and G ground truths: sort D log2 D per
  // image, D x G IoUs, D x G x 10 thresholds x 4 areas match steps, D x 4 areas x 3 caps
  // accumulated on the coordinator.
  auto coco = [&](const std::string& kind, double d) {
    return std::vector<std::tuple<std::string, double, bool>>{
        {kind + ".score_sort", images * d * std::log2(d), true},
        {kind + ".iou", images * d * g, true},
        {kind + ".greedy_match", images * d * g * 40, true},
        {kind + ".accumulate", images * d * 12, false}};
  };
  const Config ssd = metric_study("ssd", 16, "host");
  const double d_ssd = static_cast<double>(ssd.integer("workload.eval_detections_per_image"));
  CHECK(d_ssd == 200);  // the MLPerf SSD's detections per image
  const EvalMetric s = eval_metric(ssd, 5000, 4);
  CHECK(s.name == "coco_map_boxes");
  CHECK_FALSE(s.blocking);  // SSD's COCO evaluation runs while training goes on
  auto want = coco("bbox", d_ssd);
  want.insert(want.begin(), {"receive_detections", images * d_ssd * 28, false});
  check_metric(ssd, s, want);
  CHECK(host_metric_op(s, "bbox.iou")->cost_path == "hardware.host.cost.iou_ns_per_pair");

  const Config mask = metric_study("maskrcnn", 8, "host");
  const double d = static_cast<double>(mask.integer("workload.eval_detections_per_image"));
  CHECK(d == 100);
  const EvalMetric m = eval_metric(mask, 5000, 4);
  std::vector<std::tuple<std::string, double, bool>> mw = {
      {"receive_detections", images * d * (28 + 28 * 28 * 4), false}};
  for (const auto& op : coco("bbox", d)) mw.push_back(op);
  mw.push_back({"segm.paste", images * d * 128 * 96, true});
  mw.push_back({"segm.rle_encode", images * d * 640 * 480, true});
  for (const auto& op : coco("segm", d)) mw.push_back(op);
  check_metric(mask, m, mw);
  CHECK(host_metric_op(m, "segm.iou")->cost_path == "hardware.host.cost.mask_iou_ns_per_pair");

  // BLEU: n-grams n = 1..4 of the hypothesis and the reference, decode_length tokens each.
  const Config tr = metric_study("transformer_big", 16, "host");
  const double len = static_cast<double>(tr.integer("workload.decode_length"));
  const EvalMetric b = eval_metric(tr, 3003, 4);
  CHECK(b.blocking);
  check_metric(tr, b, {{"ngram_count", 3003 * 2 * (4 * len - 6), true}});

  // BERT and ResNet-50: the device computes the accuracy; no host operation.
  CHECK(eval_metric(metric_study("bert_large", 8, "host"), 10000, 4).ops.empty());
  CHECK(eval_metric(metric_study("resnet50", 16, "host"), 50000, 4).ops.empty());
}

TEST_CASE("eval metrics: on the device no host work - all_hosts divides it, plus the gather") {
  for (const auto& [model, batch] : std::vector<std::pair<std::string, long long>>{
           {"ssd", 16}, {"maskrcnn", 8}, {"transformer_big", 16}}) {
    CAPTURE(model);
    const int hosts = 512;
    const EvalMetric one = eval_metric(metric_study(model, batch, "host"), 5000, hosts);
    const EvalMetric all = eval_metric(metric_study(model, batch, "all_hosts"), 5000, hosts);
    CHECK(eval_metric(metric_study(model, batch, "device"), 5000, hosts).ops.empty());
    CHECK(eval_metric(metric_study(model, batch, "device"), 5000, hosts).busiest_host_ns() == 0);
    CHECK(one.hosts == 1);
    CHECK(all.hosts == hosts);
    // The per-example work of one host split over all; the coordinator's accumulation stays;
    // the detections it received become the match records it gathers.
    double per_example = 0, accumulate = 0;
    for (const MetricOp& op : one.ops) {
      if (op.per_example) per_example += op.ns();
      if (op.name.find("accumulate") != std::string::npos) accumulate += op.ns();
    }
    double gather = 0;
    for (const MetricOp& op : all.ops)
      if (op.name.find("gather") != std::string::npos) gather += op.ns();
    CHECK(gather > 0);
    CHECK(all.busiest_host_ns() == Approx(per_example / hosts + accumulate + gather));
  }
}

TEST_CASE("eval metrics: more detections per image than the device keeps are refused") {
  Config ssd = test::model_study("ssd", "2x2", 16, nlohmann::json::object(),
                                 {{"eval_detections_per_image", 201}});
  try {
    eval_metric(ssd, 5000, 1);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.problems().front().where == "workload.eval_detections_per_image");
  }
  // Fewer: the sizes follow.
  Config few = test::model_study("ssd", "2x2", 16, nlohmann::json::object(),
                                 {{"eval_detections_per_image", 50}});
  CHECK(host_metric_op(eval_metric(few, 5000, 1), "bbox.iou")->units ==
        Approx(5000 * 50 * 860001.0 / 118287));
}
