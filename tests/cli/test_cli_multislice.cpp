// Multislice (docs/network.md, "Multislice"): slices joined by the data-center network, data
// parallelism across them, hierarchical all-reduces. Expectations from the parameters and the
// closed forms of the hierarchical all-reduce.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/bad_input.hpp"

namespace {
using json = nlohmann::json;

json collective(const std::vector<std::string>& sets, const std::string& topology = "4x4",
                const std::string& bytes = "1MiB") {
  auto r = run_tpusim(
      with_sets({"collective", "--op", "all-reduce", "--bytes", bytes, "--topology", topology,
                 "--mesh", topology == "2x2" ? "data=8" : "data=32", "--axes", "data", "--json"},
                sets));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

// BERT-Large on slices of 2x2 v3 chips (8 cores each), data parallel over all of them.
std::vector<std::string> bert(int slices, const std::string& topology = "2x2", int batch = 0) {
  return {"run",
          "configs/studies/bert_large_16.json",
          "--json",
          "--set",
          "topology=" + topology,
          "--set",
          "topology.slices=" + std::to_string(slices),
          "--set",
          "parallelism.slices=" + std::to_string(slices),
          "--set",
          "workload.global_batch=" + std::to_string(batch > 0 ? batch : 8 * slices),
          "--set",
          "parallelism.weight_update_sharding=false"};
}

// A symmetric run `sym` and a full run `full` of one study agree figure for figure.
void check_symmetric_equals_full(const json& sym, const json& full) {
  CHECK_THAT(sym["simulation"].get<std::string>(), Catch::StartsWith("symmetric:"));
  CHECK_THAT(full["simulation"].get<std::string>(), Catch::StartsWith("full:"));
  for (const char* k : {"step_time_ms", "communication_ms", "communication_dcn_ms",
                        "communication_ici_ms", "exposed_communication_ms"})
    CHECK(sym[k] == full[k]);
  CHECK(sym["dcn"] == full["dcn"]);
  CHECK(sym["links"] == full["links"]);
}
}  // namespace

TEST_CASE(
    "multislice: a hierarchical all-reduce sends 2 (S-1)/S of each shard per chip over the DCN") {
  const double bytes = 1024.0 * 1024;
  for (int s : {2, 3, 4}) {
    const json j = collective({"topology.slices=" + std::to_string(s)});
    INFO("slices " << s);
    CHECK(j["slices"] == s);
    CHECK(j["chips"] == 16 * s);
    const double devices_per_chip = j["cores"].get<double>() / j["chips"].get<double>();
    const double shard = bytes / j["group_size"].get<double>();  // after the ICI reduce-scatter
    CHECK(j["dcn_bytes_per_chip"].get<double>() ==
          Approx(2.0 * (s - 1) / s * shard * devices_per_chip));
    CHECK_THAT(j["algorithm"].get<std::string>(), Catch::Contains("dcn_ring"));
  }
}

TEST_CASE("multislice: with a DCN much slower than ICI the all-reduce time tends to the DCN term") {
  // 2 slices of one 2x2 host (hardware.host.chip_block 4x2 clipped to the grid: 4 chips, 8
  // cores); the hosts' interfaces at 0.05 GB/s, no DCN latency, the fabric's share far faster.
  const int s = 2;
  const double bytes = 8.0 * 1024 * 1024, nic = 0.05e9;
  const json j = collective(
      {"topology.slices=2", "dcn.nic_bandwidth_GBps=0.05", "dcn.latency_us=0", "dcn.host_nics=1"},
      "2x2", "8MiB");
  const double n = j["group_size"].get<double>();
  const double host_cores = n;  // one host feeds the whole slice
  // 2 (S-1) steps, each the host's cores sending 1/S of their shard (bytes / n) over its NICs.
  const double dcn_term = 2.0 * (s - 1) * host_cores * bytes / (n * s) / nic;
  const double t = j["collective_time_ns"].get<double>() * 1e-9;
  CHECK(t >= dcn_term);
  CHECK(t <= 1.01 * dcn_term);
  CHECK(j["dcn_time_ns"].get<double>() * 1e-9 >= dcn_term);
  CHECK(j["dcn_time_ns"].get<double>() * 1e-9 <= t);
  // Twice the interfaces: half the DCN term.
  const json twice = collective(
      {"topology.slices=2", "dcn.nic_bandwidth_GBps=0.05", "dcn.latency_us=0", "dcn.host_nics=2"},
      "2x2", "8MiB");
  const double t2 = twice["collective_time_ns"].get<double>() * 1e-9;
  CHECK(t2 >= dcn_term / 2);
  CHECK(t2 <= 1.01 * dcn_term / 2);
}

TEST_CASE("multislice: one slice is today's machine exactly") {
  auto strip = [](json j) {
    for (const char* k :
         {"wall_s", "events", "kernel_events", "network_work_items", "config", "elaboration_s"})
      j.erase(k);
    return j;
  };
  CHECK(strip(collective({"topology.slices=1"})) == strip(collective({})));
  auto one = run_tpusim(bert(1));
  auto plain = run_tpusim({"run", "configs/studies/bert_large_16.json", "--json", "--set",
                           "topology=2x2", "--set", "workload.global_batch=8", "--set",
                           "parallelism.weight_update_sharding=false"});
  REQUIRE(one.exit_code == 0);
  REQUIRE(plain.exit_code == 0);
  const json a = json::parse(one.out), b = json::parse(plain.out);
  CHECK(a["step_time_ms"] == b["step_time_ms"]);
  CHECK(a["communication_ms"] == b["communication_ms"]);
  CHECK(!a.contains("slices"));
  CHECK(!a.contains("communication_dcn_ms"));
}

TEST_CASE("multislice: the report counts every slice's chips and splits communication") {
  auto r = run_tpusim(bert(4));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["slices"] == 4);
  CHECK(j["chips"] == 16);
  CHECK(j["chips_per_slice"] == 4);
  CHECK(j["global_batch"] == 32);
  CHECK(j["examples_per_s"].get<double>() == Approx(32 / (j["step_time_ms"].get<double>() * 1e-3)));
  CHECK(j["communication_dcn_ms"].get<double>() > 0);
  CHECK(j["communication_ici_ms"].get<double>() + j["communication_dcn_ms"].get<double>() ==
        Approx(j["communication_ms"].get<double>()));
  // The gradients' all-reduce: each core's shard of the f32 or bf16 gradient bytes, 2 (S-1)/S
  // of it, for every core of a chip.
  const double grad_bytes = j["collectives"]["all-reduce"]["bytes_per_core"].get<double>();
  const double devices_per_chip = j["cores"].get<double>() / j["chips"].get<double>();
  const double shard = grad_bytes / (4 * devices_per_chip);  // 8 cores per 2x2 slice
  CHECK(j["dcn"]["bytes_per_chip"].get<double>() ==
        Approx(2.0 * 3 / 4 * shard * devices_per_chip).epsilon(0.01));
  auto text = run_tpusim({"run", "configs/studies/bert_large_4x4096_v4.json", "--set",
                          "topology.dims=[2,2,2]", "--set", "workload.global_batch=64"});
  INFO(text.err);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("in 4 slices of 8 chips"));
  CHECK_THAT(text.out, Catch::Contains("over the data-center network"));
}

TEST_CASE("multislice: a layout out of memory and validate count every slice's chips too") {
  // 4 slices of 2x2 v3 chips at 256 sequences per core: out of memory (exit 1), and the --json
  // verdict (a sweep's row) counts the chips and cores of the 4 slices, as a run's report does.
  auto r = run_tpusim(bert(4, "2x2", 32 * 256));
  REQUIRE(r.exit_code == 1);
  const json j = json::parse(r.out);
  CHECK(j["out_of_memory"] == true);
  CHECK(j["chips"] == 16);
  CHECK(j["cores"] == 32);
  std::vector<std::string> validate = bert(4);
  validate[0] = "validate";
  auto v = run_tpusim(validate);
  INFO(v.err);
  REQUIRE(v.exit_code == 0);
  const json k = json::parse(v.out);
  CHECK(k["chips"] == 16);
  CHECK(k["cores"] == 32);
}

TEST_CASE("multislice: the symmetric and the full simulation agree") {
  auto runs = [](const std::string& mode) {
    auto r = run_tpusim(with_sets(bert(2, "4x4", 64), {"sim.symmetry=" + mode}));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
  };
  check_symmetric_equals_full(runs("auto"), runs("off"));
}

TEST_CASE(
    "multislice: a hierarchical all-reduce's ICI halves move 2 (n-1)/n of the buffer per core") {
  // 2 slices of 4x4 v3 chips (32 cores each), one all-reduce of B over all 64 cores: inside each
  // slice a reduce-scatter and an all-gather over its n = 32 cores, each core sending (n-1)/n of
  // B in each (any algorithm that sends each byte once: per dimension, rings), around the DCN
  // ring of the shards. The links of a slice (ICI and on-chip; the other slice is its image)
  // carry 2 (n-1) B in all; the DCN 2 (S-1)/S of each core's B/n shard.
  char tmpl[] = "/tmp/tpusim_ici_XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string csv = dir + "/links.csv";
  const double b = 1024.0 * 1024, n = 32;
  auto r = run_tpusim({"collective", "--op", "all-reduce", "--bytes", "1MiB", "--topology", "4x4",
                       "--mesh", "data=32", "--axes", "data", "--set", "topology.slices=2", "--set",
                       "sim.symmetry=off", "--json", "--links-csv", csv});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  std::istringstream in(slurp(csv));
  double ici = 0;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '"') line.erase(0, 1);
    if (line.rfind("multipod.chip(", 0) != 0) continue;
    const auto quote = line.find("\",");
    REQUIRE(quote != std::string::npos);
    std::stringstream cells(line.substr(quote + 2));
    std::string bandwidth, bytes;
    std::getline(cells, bandwidth, ',');
    std::getline(cells, bytes, ',');
    ici += std::stod(bytes);
  }
  CHECK(ici == Approx(2 * (n - 1) * b));
  const double devices_per_chip = j["cores"].get<double>() / j["chips"].get<double>();
  CHECK(j["dcn_bytes_per_chip"].get<double>() == Approx(2.0 * 1 / 2 * b / n * devices_per_chip));
}

TEST_CASE("multislice: bad slice counts are one error line with exit code 2") {
  const std::string study = "configs/studies/bert_large_4x4096_v4.json";
  check_bad({"run", study, "--set", "topology.slices=0"}, "topology.slices");
  check_bad({"run", study, "--set", "topology.slices=two"}, "topology.slices");
  check_bad({"run", study, "--set", "parallelism.slices=2"}, "parallelism.slices");
  check_bad({"run", study, "--set", "parallelism.slices=0"}, "parallelism.slices");
  check_bad({"run", study, "--set", "parallelism.weight_update_sharding=true"},
            "parallelism.weight_update_sharding");
  check_bad({"run", study, "--set", "workload.global_batch=32770"}, "workload.global_batch");
  check_bad({"run", study, "--set", "dcn.nic_bandwidth_GBps=0"}, "dcn.nic_bandwidth_GBps");
}

TEST_CASE(
    "multislice: each host's DCN links are modules of the machine with the parameters' rates") {
  // 4x4 chips in host blocks of 4x2 (hardware.host.chip_block): 2 hosts of 8 chips per slice.
  char tmpl[] = "/tmp/tpusim_dcn_XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string csv = dir + "/links.csv";
  auto r = run_tpusim({"collective",
                       "--op",
                       "all-reduce",
                       "--bytes",
                       "1MiB",
                       "--topology",
                       "4x4",
                       "--mesh",
                       "data=32",
                       "--axes",
                       "data",
                       "--set",
                       "topology.slices=2",
                       "--set",
                       "dcn.host_nics=2",
                       "--set",
                       "dcn.nic_bandwidth_GBps=10",
                       "--set",
                       "dcn.bisection_bandwidth_GBps=1000",
                       "--links-csv",
                       csv});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::istringstream in(slurp(csv));
  std::string line;
  int tx = 0, fabric = 0;
  double sent = 0;
  const double hosts = 2, host_cores = 16, shard = 1024.0 * 1024 / 32;
  while (std::getline(in, line)) {
    if (line.rfind("multipod.dcn.host(", 0) != 0) continue;
    std::vector<std::string> f;
    std::stringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) f.push_back(c);
    REQUIRE(f.size() >= 3);
    const double bandwidth = std::stod(f[1]), bytes = std::stod(f[2]);
    if (f[0].find(").tx") != std::string::npos) {
      ++tx;
      CHECK(bandwidth == Approx(2 * 10.0));  // interfaces x bandwidth each
      sent += bytes;
      CHECK(bytes == Approx(host_cores * 2.0 * (2 - 1) / 2 * shard));
    } else if (f[0].find(").fabric") != std::string::npos) {
      ++fabric;
      CHECK(bandwidth == Approx(1000 / (2 * hosts)));  // the bisection over 2 H flows
    }
  }
  CHECK(tx == hosts);
  CHECK(fabric == hosts);
  CHECK(sent == Approx(hosts * host_cores * shard));
  std::system(("rm -rf " + shell_quote(dir)).c_str());
}

namespace {
// The 1 B decoder, 2 layers of 256 tokens, fsdp over each 16-chip slice (v4 megacore devices)
// and data parallel across `slices` slices: a hybrid mesh as MaxText builds it (ici_fsdp 16,
// dcn_data `slices`).
json hybrid(int slices, int fsdp = 16, const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"run",
                                   "configs/studies/decoder_1b_16.json",
                                   "--json",
                                   "--set",
                                   "workload.layers=2",
                                   "--set",
                                   "workload.seq_len=256",
                                   "--set",
                                   "parallelism.model=1",
                                   "--set",
                                   "parallelism.fsdp=" + std::to_string(fsdp),
                                   "--set",
                                   "topology.slices=" + std::to_string(slices),
                                   "--set",
                                   "parallelism.slices=" + std::to_string(slices),
                                   "--set",
                                   "workload.global_batch=" + std::to_string(16 * slices)};
  for (const auto& m : more) args.insert(args.end(), {"--set", m});
  auto r = run_tpusim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}
}  // namespace

TEST_CASE(
    "multislice: fsdp inside the slices, data across - reduce-scatter on ICI, the shard "
    "all-reduced over the DCN") {
  const double fsdp = 16;
  for (int s : {2, 4}) {
    INFO("slices " << s);
    const json j = hybrid(s);
    CHECK(j["slices"] == s);
    // Each bucket reduce-scattered over fsdp (the whole gradient, G bytes per core), then its
    // 1/fsdp shard all-reduced across the slices: the all-reduces carry G / fsdp per core.
    const double g = j["collectives"]["reduce-scatter"]["bytes_per_core"].get<double>();
    const double shard = j["collectives"]["all-reduce"]["bytes_per_core"].get<double>();
    CHECK(shard == Approx(g / fsdp));
    // The all-reduce's group in a slice is one device (data 1 per slice): all of its shard
    // crosses the DCN, 2 (S-1)/S of it, per megacore chip.
    const double per_chip = j["cores"].get<double>() / j["chips"].get<double>();
    CHECK(j["dcn"]["bytes_per_chip"].get<double>() ==
          Approx(2.0 * (s - 1) / s * shard * per_chip).epsilon(0.001));
    CHECK(j["communication_dcn_ms"].get<double>() > 0);
    CHECK(j["collectives_by_axis"]["data"]["bytes_per_core"].get<double>() == Approx(shard));
  }
  // One slice: no all-reduce at all (the reduce-scatter leaves each core its summed shard).
  const json one = hybrid(1);
  CHECK(!one["collectives"].contains("all-reduce"));
  CHECK(one["collectives"]["reduce-scatter"]["bytes_per_core"].get<double>() ==
        Approx(hybrid(2)["collectives"]["reduce-scatter"]["bytes_per_core"].get<double>()));
}

TEST_CASE(
    "multislice: data across slices with fsdp x data inside - the shard's all-reduce spans "
    "the slice's data replicas and the slices") {
  // fsdp 8 x data 2 in each slice: the shard (G / 8) all-reduced over data 2 inside (ICI) and
  // across 2 slices (DCN): hierarchical, 1/2 of the shard per member crosses, 2 (S-1)/S of it.
  const json j = hybrid(2, 8);
  const double g = j["collectives"]["reduce-scatter"]["bytes_per_core"].get<double>();
  const double shard = j["collectives"]["all-reduce"]["bytes_per_core"].get<double>();
  CHECK(shard == Approx(g / 8));
  CHECK(j["dcn"]["bytes_per_chip"].get<double>() == Approx(2.0 * 1 / 2 * shard / 2).epsilon(0.001));
}

TEST_CASE(
    "multislice: fsdp across slices (dcn_fsdp) - weights gathered over the DCN then ICI, "
    "gradients reduce-scattered over ICI then the DCN") {
  const double n = 16;  // fsdp inside each slice
  for (int s : {2, 4}) {
    INFO("slices " << s);
    const json d = hybrid(s);  // data across the slices
    const json j = hybrid(s, 16, {"parallelism.dcn_fsdp=" + std::to_string(s)});
    CHECK_THAT(j["layout"].get<std::string>(), Catch::Contains("dcn_fsdp=" + std::to_string(s)));
    // No all-reduce: the slices hold fsdp shards, not replicas.
    CHECK(!j["collectives"].contains("all-reduce"));
    // Per core the collectives carry what they do inside one slice: the whole gradient G
    // reduce-scattered, the whole weights W gathered (forward and backward).
    const double g = j["collectives"]["reduce-scatter"]["bytes_per_core"].get<double>();
    const double w = j["collectives"]["all-gather"]["bytes_per_core"].get<double>();
    CHECK(g == Approx(d["collectives"]["reduce-scatter"]["bytes_per_core"].get<double>()));
    CHECK(w == Approx(d["collectives"]["all-gather"]["bytes_per_core"].get<double>()));
    // Over the DCN each core sends (S-1)/(n S) of every gathered and every reduce-scattered
    // buffer: its 1/(n S) shard to each of its S-1 images (ring steps).
    const double per_chip = j["cores"].get<double>() / j["chips"].get<double>();
    CHECK(j["dcn"]["bytes_per_chip"].get<double>() ==
          Approx((s - 1.0) / (n * s) * (g + w) * per_chip).epsilon(0.001));
    CHECK(j["communication_dcn_ms"].get<double>() > 0);
    // Over ICI each core sends what the slice's ring collectives send: (n-1)/n of each buffer,
    // as with data across slices, less the hierarchical all-reduce's ICI halves.
    // Memory: the weights, the optimizer state and the master weights shard over fsdp x S.
    const auto& by = j["memory"]["bytes_by_class"];
    const auto& by_d = d["memory"]["bytes_by_class"];
    for (const char* cls : {"master_weights", "optimizer_state"}) {
      INFO(cls);
      CHECK(by[cls].get<double>() == Approx(by_d[cls].get<double>() / s).epsilon(1e-9));
    }
  }
}

TEST_CASE(
    "multislice: data and fsdp mixed across slices (dcn_data 2 x dcn_fsdp 2) - the closed forms "
    "of the ICI and DCN bytes") {
  // 4 slices of 16 chips, fsdp 16 inside each: slices {0,1} and {2,3} share the fsdp shards
  // (dcn_fsdp 2), slices {0,2} and {1,3} hold the same shard (dcn_data 2), as MaxText's hybrid
  // mesh orders them. F = 16, f = 2, d = 2.
  const double n = 16, f = 2, d = 2;
  const json data = hybrid(4);
  const json j = hybrid(4, 16, {"parallelism.dcn_fsdp=2"});
  CHECK_THAT(j["layout"].get<std::string>(), Catch::Contains("dcn_fsdp=2"));
  // Per core the whole gradient G reduce-scattered and the whole weights W gathered, as with
  // data across the slices; then the G / (F f) shard all-reduced over "data".
  const double g = j["collectives"]["reduce-scatter"]["bytes_per_core"].get<double>();
  const double w = j["collectives"]["all-gather"]["bytes_per_core"].get<double>();
  CHECK(g == Approx(data["collectives"]["reduce-scatter"]["bytes_per_core"].get<double>()));
  CHECK(w == Approx(data["collectives"]["all-gather"]["bytes_per_core"].get<double>()));
  const double shard = j["collectives"]["all-reduce"]["bytes_per_core"].get<double>();
  CHECK(shard == Approx(g / (n * f)));
  // DCN: (f-1)/(F f) of G and of W (the fsdp rings over 2 slices), and 2 (d-1)/d of the shard
  // (the data ring over 2 slices; the all-reduce's group in a slice is one device).
  const double per_chip = j["cores"].get<double>() / j["chips"].get<double>();
  const double dcn = (f - 1) / (n * f) * (g + w) + 2 * (d - 1) / d * shard;
  CHECK(j["dcn"]["bytes_per_chip"].get<double>() == Approx(dcn * per_chip).epsilon(0.001));
  // ICI: the slice's links carry the ICI halves alone, (F-1) G and (F-1) W over the slice's one
  // fsdp group (each step to a neighbour); the data all-reduce adds nothing (its group in a
  // slice is one device).
  CHECK(j["links"]["total_bytes"].get<double>() == Approx((n - 1) * (g + w)).epsilon(1e-6));
  // Memory: master weights and optimizer state 1/f of the data-parallel layout's.
  for (const char* cls : {"master_weights", "optimizer_state"}) {
    INFO(cls);
    CHECK(j["memory"]["bytes_by_class"][cls].get<double>() ==
          Approx(data["memory"]["bytes_by_class"][cls].get<double>() / f).epsilon(1e-9));
  }
  // The symmetric and the full simulation agree figure for figure, and the flow level sends the
  // same bytes over the same links (one model of the rings at every level).
  check_symmetric_equals_full(j, hybrid(4, 16, {"parallelism.dcn_fsdp=2", "sim.symmetry=off"}));
  const json flow = hybrid(4, 16, {"parallelism.dcn_fsdp=2", "network.fidelity=flow"});
  CHECK(flow["dcn"]["bytes_per_chip"].get<double>() ==
        Approx(j["dcn"]["bytes_per_chip"].get<double>()).epsilon(1e-9));
  CHECK(flow["links"]["total_bytes"].get<double>() ==
        Approx(j["links"]["total_bytes"].get<double>()).epsilon(1e-9));
}

TEST_CASE(
    "multislice: the data x fsdp mix's step lies between pure data and pure fsdp across the "
    "slices where the DCN sets it") {
  // DCN bytes per core (closed forms above, F = 16, S = 4): data 2 (S-1)/S G/F, fsdp
  // (S-1)/(F S) (G + W), the mix (G + W)/(2F) + G/(2F). Here W > G, so data < mix < fsdp; with
  // one interface of 0.5 GB/s a host and no DCN latency the DCN sets each step (many times the
  // compute).
  const std::vector<std::string> slow = {"dcn.nic_bandwidth_GBps=0.5", "dcn.host_nics=1",
                                         "dcn.latency_us=0"};
  auto with = [&](const std::string& f) {
    auto sets = slow;
    sets.push_back("parallelism.dcn_fsdp=" + f);
    return hybrid(4, 16, sets);
  };
  const json d = with("1"), m = with("2"), f = with("4");
  const double g = d["collectives"]["reduce-scatter"]["bytes_per_core"].get<double>();
  const double w = d["collectives"]["all-gather"]["bytes_per_core"].get<double>();
  REQUIRE(w > g);
  const double per_chip = d["cores"].get<double>() / d["chips"].get<double>();
  const double bytes_d = 1.5 * g / 16, bytes_m = (2 * g + w) / 32, bytes_f = 0.75 * (g + w) / 16;
  CHECK(d["dcn"]["bytes_per_chip"].get<double>() == Approx(bytes_d * per_chip).epsilon(0.001));
  CHECK(m["dcn"]["bytes_per_chip"].get<double>() == Approx(bytes_m * per_chip).epsilon(0.001));
  CHECK(f["dcn"]["bytes_per_chip"].get<double>() == Approx(bytes_f * per_chip).epsilon(0.001));
  const double step_d = d["step_time_ms"].get<double>(), step_m = m["step_time_ms"].get<double>(),
               step_f = f["step_time_ms"].get<double>();
  CHECK(step_d < step_m);
  CHECK(step_m < step_f);
  // Each step is its DCN term, a host's 4 chips (v4's host block) sending their bytes through
  // its interfaces at 0.5 GB/s, and a little more (the ICI halves, compute).
  for (const json* r : {&d, &m, &f}) {
    const double term = 4 * (*r)["dcn"]["bytes_per_chip"].get<double>() / 0.5e9 * 1e3;
    CHECK((*r)["step_time_ms"].get<double>() >= term);
    CHECK((*r)["step_time_ms"].get<double>() <= 1.05 * term);
  }
}

TEST_CASE("multislice: parallelism.dcn_fsdp that does not divide the slices is one error line") {
  const std::string study = "configs/studies/decoder_1b_16.json";
  check_bad({"run", study, "--set", "topology.slices=2", "--set", "parallelism.slices=2", "--set",
             "workload.global_batch=32", "--set", "parallelism.dcn_fsdp=3"},
            "parallelism.dcn_fsdp");
  check_bad({"run", study, "--set", "topology.slices=2", "--set", "parallelism.slices=2", "--set",
             "workload.global_batch=32", "--set", "parallelism.fsdp=1", "--set",
             "parallelism.dcn_fsdp=2"},
            "parallelism.dcn_fsdp");
}
