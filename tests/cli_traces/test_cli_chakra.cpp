// tpusim trace export --format chakra and trace import --format chakra, run as a user would.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tpusim.hpp"

namespace {
std::string chakra_tmp(const std::string& name) {
  return "/tmp/tpusim_cli_chakra_" + std::to_string(::getpid()) + "_" + name;
}

double step_ms(const TpusimResult& r) {
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out)["step_time_ms"].get<double>();
}

// record -> export -> import -> replay: the replayed step is the recorded run's.
void round_trip(const std::string& study) {
  const std::string trace = chakra_tmp(study + ".json"), dir = chakra_tmp(study + ".et"),
                    back = chakra_tmp(study + ".back.json");
  const double recorded = step_ms(
      run_tpusim({"run", "configs/studies/" + study + ".json", "--json", "--record-trace", trace}));
  const auto exported = run_tpusim({"trace", "export", trace, "--format", "chakra", "--out", dir});
  REQUIRE(exported.exit_code == 0);
  CHECK(std::filesystem::exists(dir + "/tpusim.0.et"));
  const auto imported = run_tpusim({"trace", "import", dir, "--format", "chakra", "--out", back});
  REQUIRE(imported.exit_code == 0);
  CHECK_THAT(imported.out, Catch::Contains("Chakra ranks in " + dir));
  CHECK(step_ms(run_tpusim({"replay", back, "--json"})) == Approx(recorded).epsilon(1e-12));
  std::filesystem::remove_all(dir);
  std::remove(trace.c_str());
  std::remove(back.c_str());
}
}  // namespace

TEST_CASE("a recorded BERT step exported to Chakra and imported replays in the same time") {
  round_trip("bert_large_16");
}

TEST_CASE("a spatially partitioned SSD step (halo permutes as send/receive pairs) round-trips") {
  round_trip("ssd_spatial_2");
}

TEST_CASE("Chakra import refuses malformed files and profile-only options with exit code 2") {
  const std::string dir = chakra_tmp("bad.et");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/x.0.et", std::ios::binary) << std::string("\x05\x0a\x01", 3);
  auto bad =
      run_tpusim({"trace", "import", dir, "--format", "chakra", "--out", chakra_tmp("b.json")});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err_lines() == 1);
  CHECK(bad.err == "tpusim: error: " + dir +
                       "/x.0.et: metadata 0 (byte 0): the message claims 5 bytes but only 2 "
                       "remain (truncated file?)\n");
  auto opt = run_tpusim(
      {"trace", "import", dir, "--format", "chakra", "--step", "0", "--out", chakra_tmp("b.json")});
  CHECK(opt.exit_code == 2);
  CHECK(opt.err ==
        "tpusim: error: --step: applies to --format profile only, not to --format chakra\n");
  auto fmt = run_tpusim({"trace", "export", "traces/examples/small_data_model.trace.json",
                         "--format", "xml", "--out", dir});
  CHECK(fmt.exit_code == 2);
  CHECK(fmt.err_lines() == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a trace without a recorded study exports with the tpu_v3 preset's durations") {
  const std::string dir = chakra_tmp("example.et");
  auto r = run_tpusim({"trace", "export", "traces/examples/small_data_model.trace.json", "--format",
                       "chakra", "--out", dir, "--standard-only"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("for 8 ranks (data 4 x model 2)"));
  auto back = run_tpusim(
      {"trace", "import", dir, "--format", "chakra", "--out", chakra_tmp("example.back.json")});
  REQUIRE(back.exit_code == 0);
  auto info = run_tpusim({"trace", "info", chakra_tmp("example.back.json"), "--json"});
  REQUIRE(info.exit_code == 0);
  auto orig =
      run_tpusim({"trace", "info", "traces/examples/small_data_model.trace.json", "--json"});
  const auto a = nlohmann::json::parse(info.out), b = nlohmann::json::parse(orig.out);
  CHECK(a["ops"] == b["ops"]);
  CHECK(a["collectives"] == b["collectives"]);
  CHECK(a["devices"] == b["devices"]);
  std::filesystem::remove_all(dir);
  std::remove(chakra_tmp("example.back.json").c_str());
}
