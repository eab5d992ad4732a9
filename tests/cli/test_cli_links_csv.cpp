#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tpusim.hpp"

TEST_CASE("tpusim collective --links-csv writes every link's bytes and utilisation") {
  // A one-way ring all-reduce on a ring of 8 one-core chips: every +X link carries the ring's
  // 2 (n-1)/n S bytes, every -X link nothing; utilisation is the link's busy time / the step.
  const std::string path = "/tmp/tpusim_links_test.csv";
  std::remove(path.c_str());
  auto r = run_tpusim({"collective", "--op", "all-reduce", "--bytes", "8MiB", "--topology", "8",
                       "--algorithm", "ring", "--set", "hardware.cores_per_chip=1", "--json",
                       "--links-csv", path});
  REQUIRE(r.exit_code == 0);
  const double step_s = nlohmann::json::parse(r.out)["collective_time_ns"].get<double>() * 1e-9;
  std::istringstream csv(slurp(path));
  std::string line;
  std::getline(csv, line);
  CHECK(line == "link,bandwidth_GBps,bytes,busy_ms,utilization,transfers");
  const double S = 8.0 * 1024 * 1024, n = 8;
  int rows = 0;
  while (std::getline(csv, line)) {
    ++rows;
    std::vector<std::string> cell;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cell.push_back(c);
    REQUIRE(cell.size() == 6);
    INFO(line);
    const double bw = std::stod(cell[1]) * 1e9, bytes = std::stod(cell[2]);
    if (cell[0].find(".ici.x+") != std::string::npos)
      CHECK(bytes == Approx(2 * (n - 1) / n * S));
    else
      CHECK(bytes == 0);
    CHECK(std::stod(cell[3]) == Approx(bytes / bw * 1e3));
    CHECK(std::stod(cell[4]) == Approx(bytes / bw / step_s));
  }
  CHECK(rows == 16);  // 8 chips x (+X, -X)
  std::remove(path.c_str());
}

TEST_CASE("tpusim collective --links-csv to a place that cannot be written is one error line") {
  auto r = run_tpusim({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--topology", "8",
                       "--links-csv", "/nonexistent-dir/links.csv"});
  CHECK(r.exit_code == 2);
  CHECK(r.err_lines() == 1);
  CHECK_THAT(r.err,
             Catch::Contains("--links-csv") && Catch::Contains("/nonexistent-dir/links.csv"));
}

namespace {
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

TEST_CASE("tpusim run --stats writes the module tree's statistics, which add up to the report") {
  const std::string path = "/tmp/tpusim_stats_test.json";
  std::remove(path.c_str());
  auto r = run_tpusim({"run", "configs/studies/bert_large_16.json", "--json", "--stats", path});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = nlohmann::json::parse(r.out);
  const auto stats = nlohmann::json::parse(slurp(path));
  CHECK(stats["schema_version"] == 1);
  CHECK(stats["systemc_objects"] == report["systemc_objects"]);
  // Every ICI and on-chip link's bytes add up to the report's total.
  double link_bytes = 0, last_finish = -1;
  std::string last;
  for (const auto& [name, value] : stats["stats"].items()) {
    if ((name.find(".ici.") != std::string::npos || name.find(".onchip.") != std::string::npos) &&
        ends_with(name, ".bytes"))
      link_bytes += value.get<double>();
    if (ends_with(name, ".finish_ns") && value.get<double>() > last_finish) {
      last_finish = value.get<double>();
      last = name.substr(0, name.size() - 10);
    }
  }
  CHECK(link_bytes == Approx(report["links"]["total_bytes"].get<double>()));
  // The core that finished last is the report's: its finish, compute and resources' busy times.
  REQUIRE(!last.empty());
  const auto& s = stats["stats"];
  CHECK(last_finish * 1e-6 == Approx(report["step_time_ms"].get<double>()));
  CHECK(s[last + ".compute_ns"].get<double>() * 1e-6 == Approx(report["compute_ms"].get<double>()));
  const auto& occ = report["core_resources"];
  CHECK(s[last + ".hbm.busy_ns"].get<double>() * 1e-6 == Approx(occ["hbm_busy_ms"].get<double>()));
  CHECK(s[last + ".mxu.busy_ns"].get<double>() * 1e-6 == Approx(occ["mxu_busy_ms"].get<double>()));
  CHECK(s[last + ".dma.busy_ns"].get<double>() * 1e-6 == Approx(occ["dma_busy_ms"].get<double>()));
  CHECK(stats["descriptions"]["hbm.bytes_read"]["unit"] == "bytes");
  std::remove(path.c_str());
}

TEST_CASE("a symmetric BERT-4096 run elaborates SystemC objects for its domain only") {
  // 3 at the top, 1 per chip of the domain, 10 per core (docs/systemc.md); the full machine would
  // elaborate 3 + chips + 10 x cores.
  auto r = run_tpusim({"run", "configs/studies/bert_large_4096.json", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = nlohmann::json::parse(r.out);
  int simulated = 0, total = 0, px = 0, py = 0;
  REQUIRE(std::sscanf(report["simulation"].get<std::string>().c_str(),
                      "symmetric: %d of %d cores simulated (a domain of %d x %d chips)", &simulated,
                      &total, &px, &py) == 4);
  const double objects = report["systemc_objects"].get<double>();
  CHECK(objects == 3 + px * py + 10.0 * simulated);
  const double chips = report["chips"].get<double>(), cores = report["cores"].get<double>();
  CHECK(objects < 0.05 * (3 + chips + 10 * cores));
}

TEST_CASE("on TPU v4 every core's CMEM statistics hold the compiler's CMEM bytes") {
  // The compiler places buffers in CMEM (128 MiB per v4 chip); each core's CMEM socket sees
  // their bytes, read or written, as the report's compiler summary counts them per core.
  const std::string path = "/tmp/tpusim_stats_cmem_test.json";
  std::remove(path.c_str());
  auto r =
      run_tpusim({"run", "configs/studies/bert_large_4x4096_v4.json", "--json", "--stats", path});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = nlohmann::json::parse(r.out);
  const double per_core = report["compiler"]["cmem_bytes_per_core"].get<double>();
  REQUIRE(per_core > 0);
  const auto stats = nlohmann::json::parse(slurp(path));
  std::map<std::string, double> cmem;  // per core: bytes read and written
  for (const auto& [name, value] : stats["stats"].items()) {
    for (const char* tail : {".cmem.bytes_read", ".cmem.bytes_written"})
      if (ends_with(name, tail))
        cmem[name.substr(0, name.size() - std::string(tail).size())] += value.get<double>();
  }
  REQUIRE(!cmem.empty());
  for (const auto& [core, bytes] : cmem) {
    INFO(core);
    CHECK(bytes == Approx(per_core));
  }
  std::remove(path.c_str());
}
