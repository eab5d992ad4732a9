#include <catch2/catch.hpp>
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
