// The convolutional models through the real binary: spatial partitioning pays at 2-way and its
// edge shrinks with the degree (faster on SSD's small maps than on Mask R-CNN's large ones); bad
// convolutional layouts are one error line naming the JSON path, exit code 2.
// Studies: configs/studies/{ssd,maskrcnn}_spatial_{1,2,4,8}.json (64 chips, images per replica
// fixed, only the degree varies).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli/bad_input.hpp"

namespace {

double step_ms(const std::string& study) {
  auto r = run_tpusim({"run", "configs/studies/" + study + ".json", "--json"});
  INFO(study << ": " << r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out).at("step_time_ms").get<double>();
}

// Parallel efficiency of degree s at the same images per replica: T(1) / (s x T(s)).
std::vector<double> efficiencies(const std::string& model) {
  const double t1 = step_ms(model + "_spatial_1");
  std::vector<double> e;
  for (int s : {2, 4, 8}) e.push_back(t1 / (s * step_ms(model + "_spatial_" + std::to_string(s))));
  return e;
}

}  // namespace

TEST_CASE("spatial partitioning: 2-way beats unpartitioned and the edge shrinks with the degree") {
  const auto ssd = efficiencies("ssd");
  const auto mask = efficiencies("maskrcnn");
  INFO("ssd efficiencies " << ssd[0] << " " << ssd[1] << " " << ssd[2]);
  INFO("maskrcnn efficiencies " << mask[0] << " " << mask[1] << " " << mask[2]);
  // 2-way shortens the step of both (efficiency > 1/2 means T(2) < T(1))...
  CHECK(ssd[0] * 2 > 1);
  CHECK(mask[0] * 2 > 1);
  // ...but every doubling gains less...
  for (const auto& e : {ssd, mask}) {
    CHECK(e[0] > e[1]);
    CHECK(e[1] > e[2]);
  }
  // ...and small feature maps lose the edge sooner than large ones.
  for (int i = 0; i < 3; ++i) CHECK(ssd[i] < mask[i]);
}

TEST_CASE("bad convolutional layouts: one error line naming the JSON path and exit code 2") {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--set", "parallelism.bn_group_cores=256"},
       "parallelism.bn_group_cores: 256 cores is larger"},
      {{"--set", "parallelism.bn_group_cores=6"}, "parallelism.bn_group_cores: 6 cores"},
      {{"--set", "parallelism.bn_group_cores=3", "--set", "parallelism.spatial=2"},
       "parallelism.bn_group_cores: 3 is not a whole number of replicas"},
  };
  for (const auto& [sets, message] : cases) {
    std::vector<std::string> args{"run", "configs/studies/ssd_64.json"};
    args.insert(args.end(), sets.begin(), sets.end());
    auto r = run_tpusim(args);
    check_bad_input(r, message);
  }
  // A 32x32 image is 16 rows after space-to-depth: 32 cores cannot split it.
  auto r = run_tpusim({"run", "configs/studies/resnet50_16.json", "--set", "workload.image_size=32",
                       "--set", "parallelism.spatial=32"});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err, Catch::Contains("parallelism.spatial: 32 cores cannot split the 16 rows"));
}

TEST_CASE("the layout label says data replicas and cores per batch-norm group as plan does") {
  // 16 chips = 32 cores, pure data parallel, batch-norm groups of 8 cores: 32 data replicas in 4
  // groups; the label says data=32 and bn=8 (parallelism.bn_group_cores), never data=4.
  auto r = run_tpusim({"run", "configs/studies/resnet50_16.json", "--set",
                       "parallelism.bn_group_cores=8", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["cores"] == 32);
  CHECK(j["layout"] == "data=32 model=1 bn=8 wus=off");
}
