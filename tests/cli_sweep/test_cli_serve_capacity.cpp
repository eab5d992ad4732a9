// tpusim serve --find-rate --space (docs/serving.md, "Capacity search"): the search's winner
// against the configurations' own --find-rate runs, the memory verdict of a configuration that
// cannot hold one sequence, results.csv, and bad space input.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli/bad_input.hpp"
#include "tests/cli/run_tpusim.hpp"

namespace {
using json = nlohmann::json;

// The serving tests' machine (one_v5e_decoder), 24 short requests: a find-rate takes well under
// a second.
const std::vector<std::string> kCapacityRequests = {
    "--set", "serving.requests.count=24",         "--set", "serving.requests.input_tokens=128",
    "--set", "serving.requests.output_tokens=16", "--set", "workload.seq_len=512"};

TpusimResult capacity_serve(const std::vector<std::string>& extra) {
  std::vector<std::string> args = one_v5e_decoder("serve", kCapacityRequests);
  args.push_back("--find-rate");
  args.insert(args.end(), extra.begin(), extra.end());
  return run_tpusim(args);
}

json capacity_json(const std::vector<std::string>& extra) {
  std::vector<std::string> args = extra;
  args.push_back("--json");
  const TpusimResult r = capacity_serve(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

// A row's order: the Server rate found (0 when none), then the Offline throughput.
std::pair<double, double> capacity_key(const json& find_rate) {
  const double server = find_rate["server"]["found"].get<bool>()
                            ? find_rate["server"]["rate_per_s"].get<double>()
                            : 0;
  return {server, find_rate["offline"]["requests_per_s"].get<double>()};
}
}  // namespace

TEST_CASE("serve --space: the winner is the best of the configurations' own --find-rate runs") {
  const json search = capacity_json(
      {"--space", "serving.max_num_seqs=2,8", "--space", "workload.quantization=none,int8"});
  REQUIRE(search["rows"].size() == 4);
  std::string best_name;
  std::pair<double, double> best{-1, -1};
  std::pair<double, double> previous{1e300, 1e300};
  for (const json& row : search["rows"]) {
    REQUIRE(row["status"] == "ok");
    // The same configuration alone, by --set.
    std::vector<std::string> sets;
    for (const auto& v : row["values"].items())
      sets.insert(sets.end(), {"--set", v.key() + "=" +
                                            (v.value().is_string() ? v.value().get<std::string>()
                                                                   : v.value().dump())});
    const json alone = capacity_json(sets)["find_rate"];
    const json& f = row["find_rate"];
    CHECK(f["offline"]["requests_per_s"].get<double>() ==
          alone["offline"]["requests_per_s"].get<double>());
    CHECK(f["server"]["rate_per_s"].get<double>() == alone["server"]["rate_per_s"].get<double>());
    CHECK(f["server"]["found"] == alone["server"]["found"]);
    // Per chip: over the study's chips.
    CHECK(row["per_chip"]["server_rate_per_s"].get<double>() ==
          Approx(f["server"]["rate_per_s"].get<double>() / row["chips"].get<double>()));
    // Rows in rank order.
    const auto key = capacity_key(alone);
    CHECK(key <= previous);
    previous = key;
    if (key > best) {
      best = key;
      best_name = row["configuration"].get<std::string>();
    }
  }
  REQUIRE(best.first > 0);
  REQUIRE(search["winner"].is_object());
  CHECK(search["winner"]["configuration"] == best_name);
  CHECK(search["winner"]["find_rate"]["server"]["rate_per_s"].get<double>() == best.first);
  CHECK(search["winner"]["rank"] == 1);
}

TEST_CASE("serve --space: a configuration that cannot hold one sequence is reported, not run") {
  const auto dir = std::filesystem::temp_directory_path() / "tpusim_serve_capacity_out";
  std::filesystem::remove_all(dir);
  const json search = capacity_json({"--space", "serving.max_num_seqs=2,4", "--space",
                                     "workload.seq_len=512,131072", "--out", dir.string()});
  REQUIRE(search["rows"].size() == 4);
  int unfit = 0;
  for (const json& row : search["rows"]) {
    const bool long_model = row["values"]["workload.seq_len"] == 131072;
    CHECK(row["status"] == (long_model ? "does_not_fit" : "ok"));
    if (!long_model) continue;
    ++unfit;
    // The memory verdict names the path, and nothing was simulated for it.
    CHECK_THAT(row["error"].get<std::string>(), Catch::Contains("serving.max_model_len"));
    CHECK_FALSE(row.contains("find_rate"));
    CHECK_FALSE(row.contains("step_shapes_simulated"));
    CHECK(row["rank"].is_null());
  }
  CHECK(unfit == 2);
  // results.csv: one row per configuration in the space's order, a column per axis.
  std::ifstream in(dir / "results.csv");
  REQUIRE(in.good());
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  REQUIRE(lines.size() == 5);
  CHECK_THAT(lines[0], Catch::StartsWith("point,id,status,serving.max_num_seqs,workload.seq_len,"));
  CHECK_THAT(lines[1], Catch::StartsWith("0,max_num_seqs=2 seq_len=512,ok,2,512,"));
  CHECK_THAT(lines[2], Catch::StartsWith("1,max_num_seqs=2 seq_len=131072,does_not_fit,2,131072,"));
  CHECK(std::filesystem::exists(dir / "search.json"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("serve --space: bad space input is one error line naming the path, exit 2") {
  auto bad = [](const std::vector<std::string>& extra, const std::string& named) {
    const TpusimResult r = capacity_serve(extra);
    check_bad_input(r, named);
    CHECK(r.out.empty());
  };
  bad({"--space", "serving.no_such_key=1,2"}, "serving.no_such_key");
  bad({"--space", "workload.quantization=none,bf16"}, "workload.quantization=bf16");
  bad({"--space", "serving.max_num_seqs=0,4"}, "serving.max_num_seqs");
  bad({"--space", "serving.max_num_seqs=4,4"}, "serving.max_num_seqs");
  bad({"--space", "serving.max_num_seqs=4,,8"}, "serving.max_num_seqs");
  bad({"--space", "serving.max_num_seqs"}, "serving.max_num_seqs");
  bad({"--space", "serving.max_num_seqs=4", "--space", "serving.max_num_seqs=8"},
      "serving.max_num_seqs");
  // Without --find-rate: the option named.
  std::vector<std::string> args = one_v5e_decoder("serve", kCapacityRequests);
  for (const char* s : {"--space", "serving.max_num_seqs=2,4"}) args.push_back(s);
  check_bad(args, "--space");
}
