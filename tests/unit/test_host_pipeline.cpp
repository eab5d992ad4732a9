// The hosts' chip blocks (topologies/host_blocks.hpp) and the input pipelines' operations
// (models/input_pipeline.hpp), each against its closed form from the parameters.
#include <catch2/catch.hpp>

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
