// Chip generations end to end (docs/studies.md, "Chip generations"): every preset runs every
// shipped model at a small size, --set preset= switches generations, and the reports count
// chips, devices and TensorCores as the preset describes them.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tpusim.hpp"

namespace {
using json = nlohmann::json;

struct Generation {
  const char* preset;
  const char* topology;  ///< 4 chips: one host of each generation
};
const Generation kGenerations[] = {
    {"tpu_v3", "2x2"}, {"tpu_v4", "2x2x1"}, {"tpu_v5p", "2x2x1"}, {"tpu_v5e", "2x2"}};

/// One small study per shipped model (the sizes of tests/cli/test_param_effect.cpp).
const std::vector<std::vector<std::string>> kModels = {
    {"configs/studies/bert_large_16.json", "--set", "workload.global_batch=8"},
    {"configs/studies/resnet50_16.json", "--set", "workload.global_batch=16"},
    {"configs/studies/ssd_64.json", "--set", "workload.global_batch=16", "--set",
     "parallelism.bn_group_cores=2"},
    {"configs/studies/maskrcnn_16.json", "--set", "workload.global_batch=8"},
    {"configs/studies/transformer_big_256.json", "--set", "workload.global_batch=16"},
    {"configs/studies/decoder_1b_16.json", "--set", "workload.layers=2", "--set",
     "workload.seq_len=256", "--set", "parallelism.model=2", "--set", "parallelism.fsdp=2", "--set",
     "workload.global_batch=8"},
};

/// `tpusim ARGS`, run once per process: both cases read the presets' hardware and BERT's run on
/// each generation's host.
const TpusimResult& generation_run(const std::vector<std::string>& args) {
  static std::map<std::vector<std::string>, TpusimResult> runs;
  auto it = runs.find(args);
  if (it == runs.end()) it = runs.emplace(args, run_tpusim(args)).first;
  return it->second;
}

json preset_hardware(const std::string& preset) {
  const auto& r = generation_run(
      {"validate", "configs/studies/bert_large_16.json", "--set", "preset=" + preset, "--json"});
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out)["config"]["hardware"];
}

/// `run` of one small study (a line of kModels) on generation `g`'s host, --json.
std::vector<std::string> generation_args(const std::vector<std::string>& model,
                                         const Generation& g) {
  std::vector<std::string> args{"run"};
  args.insert(args.end(), model.begin(), model.end());
  for (const std::string& s :
       {std::string("preset=") + g.preset, std::string("topology=") + g.topology})
    args.insert(args.end(), {"--set", s});
  args.push_back("--json");
  return args;
}
}  // namespace

TEST_CASE("every generation preset builds and runs every shipped model on one host of chips") {
  for (const auto& g : kGenerations) {
    const json hw = preset_hardware(g.preset);
    const int tensorcores = hw["cores_per_chip"].get<int>();
    const int devices_per_chip = hw["megacore"].get<bool>() ? 1 : tensorcores;
    for (const auto& model : kModels) {
      const auto& r = generation_run(generation_args(model, g));
      INFO(g.preset << " " << model.front() << ": " << r.err);
      REQUIRE(r.exit_code == 0);
      const json rep = json::parse(r.out);
      CHECK(rep["config"]["hardware"]["name"] == hw["name"]);
      CHECK(rep["chips"] == 4);
      CHECK(rep["devices"] == 4 * devices_per_chip);
      CHECK(rep["tensorcores"] == 4 * tensorcores);
      // Useful MXU work never exceeds the devices' peak over the step.
      CHECK(rep["mxu_utilization"].get<double>() > 0);
      CHECK(rep["mxu_utilization"].get<double>() <= 1);
    }
  }
}

TEST_CASE("switching generations with --set preset= gives the preset's hardware in the report") {
  for (const auto& g : kGenerations) {
    INFO(g.preset);
    const json hw = preset_hardware(g.preset);
    // BERT at a batch of 8 (kModels' first line), as the case above runs it.
    const auto& r = generation_run(generation_args(kModels.front(), g));
    REQUIRE(r.exit_code == 0);
    const json rep = json::parse(r.out);
    CHECK(rep["config"]["hardware"] == hw);
  }
}

TEST_CASE("a megacore report names devices and cores, and megacore=false gives a device per core") {
  const std::vector<std::string> base{"run",   "configs/studies/bert_large_16.json",
                                      "--set", "preset=tpu_v4",
                                      "--set", "topology=2x2x1",
                                      "--set", "workload.global_batch=8"};
  const auto mega = run_tpusim(base);
  REQUIRE(mega.exit_code == 0);
  CHECK_THAT(mega.out, Catch::Contains("on 4 chips (4 megacore devices, 8 cores)"));
  auto split = base;
  split.insert(split.end(), {"--set", "hardware.megacore=false"});
  const auto cores = run_tpusim(split);
  REQUIRE(cores.exit_code == 0);
  CHECK_THAT(cores.out, Catch::Contains("on 4 chips (8 cores)"));
}

TEST_CASE("plan searches megacore against one replica per core on a chip of two cores") {
  const std::string out = "/tmp/tpusim_cli_generations_plan_" + std::to_string(::getpid());
  const auto r = run_tpusim({"plan",    "configs/studies/bert_large_16.json",
                             "--set",   "preset=tpu_v4",
                             "--set",   "topology=2x2x1",
                             "--set",   "workload.global_batch=8",
                             "--space", "hardware.megacore=true,false",
                             "--space", "parallelism.model=1",
                             "--space", "parallelism.grad_bucket_MiB=32",
                             "--space", "parallelism.grad_dtype=bf16",
                             "--space", "parallelism.weight_update_sharding=true",
                             "-j",      "2",
                             "--out",   out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json plan = json::parse(slurp(out + "/plan.json"));
  std::filesystem::remove_all(out);
  CHECK(plan["counts"]["simulated"] == 2);
  std::map<bool, json> by_megacore;
  for (const auto& [id, c] : plan["candidates"].items())
    by_megacore[c["values"]["hardware.megacore"].get<bool>()] = c;
  REQUIRE(by_megacore.size() == 2);
  // A megacore device runs the chip's 2 sequences where a core runs 1: more memory per device.
  CHECK(by_megacore[true]["peak_memory_bytes"].get<double>() >
        by_megacore[false]["peak_memory_bytes"].get<double>());
}
