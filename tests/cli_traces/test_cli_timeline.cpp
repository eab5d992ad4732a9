// tpusim run --timeline: the Chrome trace file read back and checked against the run's report.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/cli/run_tpusim.hpp"
#include "traces/format/file_bytes.hpp"

using nlohmann::json;

namespace {

const char* kCliTimelineStudy =
    "configs/studies/bert_large_16.json";  // 16 chips, 32 cores: all traced
// Two of BERT-Large's 24 encoder layers: every kind of span, counter and track of the full
// model's timeline in a twelfth of its 14 MB, which the checks below walk event by event.
const char* kCliTimelineLayers = "workload.layers=2";

std::string timeline_tmp(const std::string& name) {
  return "/tmp/tpusim_cli_timeline_" + std::to_string(::getpid()) + "_" + name;
}

struct Run {
  json report, trace;
};

Run run_with_timeline(const std::string& file, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{
      "run",   kCliTimelineStudy, "--json", "--timeline", timeline_tmp(file),
      "--set", kCliTimelineLayers};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_tpusim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Run out{json::parse(r.out), json::parse(tpusim::trace::read_file_maybe_gzip(timeline_tmp(file)))};
  std::remove(timeline_tmp(file).c_str());
  return out;
}

bool is_collective(const json& e) {
  return e["cat"].get<std::string>().rfind("collective:", 0) == 0;
}

/// No two spans of one thread overlap (Perfetto nests spans of a thread by time).
void check_no_overlap_within_threads(const json& trace) {
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> by_thread;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X")
      by_thread[{e["pid"].get<int>(), e["tid"].get<int>()}].emplace_back(
          e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
  for (auto& [thread, spans] : by_thread) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) {
      INFO("pid " << thread.first << " tid " << thread.second << " span " << i);
      CHECK(spans[i].first >= spans[i - 1].second - 1e-6);
    }
  }
}

}  // namespace

TEST_CASE("timeline spans carry args that add up to the report's FLOPs and bytes") {
  const Run r = run_with_timeline("sync.json");
  const int cores = r.report["cores"], chips = r.report["chips"];
  double flops_core0 = 0, bytes_core0 = 0;
  int spans = 0;
  for (const auto& e : r.trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++spans;
    const json& a = e["args"];
    REQUIRE(a.is_object());
    CHECK(a.contains("op_index"));
    CHECK(a.contains("phase"));
    if (is_collective(e)) {
      CHECK(a["algorithm"].is_string());
      CHECK(a["group"].is_string());
      if (a["core"] == 0) bytes_core0 += a["bytes_per_core"].get<double>();
    } else {
      CHECK(a.contains("hbm_bytes_read"));
      if (a["core"] == 0) flops_core0 += a["flops"].get<double>();
    }
  }
  REQUIRE(spans > 0);
  CHECK(flops_core0 == Approx(r.report["useful_tflop_per_core"].get<double>() * 1e12));
  double report_bytes = 0;
  for (const auto& [kind, c] : r.report["collectives"].items())
    report_bytes += c["bytes_per_core"].get<double>();
  CHECK(bytes_core0 == Approx(report_bytes));

  // Metadata: every core of the slice traced, each chip's process named once, numeric pids.
  const json& other = r.trace["otherData"];
  std::vector<int> all(static_cast<std::size_t>(cores));
  for (int c = 0; c < cores; ++c) all[static_cast<std::size_t>(c)] = c;
  CHECK(other["traced_cores"].get<std::vector<int>>() == all);
  std::map<int, int> process_names;
  std::set<std::pair<int, int>> thread_names;
  for (const auto& e : r.trace["traceEvents"]) {
    CHECK(e["pid"].is_number_integer());
    if (e["name"] == "process_name") ++process_names[e["pid"].get<int>()];
    if (e["name"] == "thread_name")
      CHECK(thread_names.insert({e["pid"].get<int>(), e["tid"].get<int>()}).second);
  }
  CHECK(process_names.size() == static_cast<std::size_t>(chips));
  for (const auto& [pid, n] : process_names) CHECK(n == 1);
  // Synchronous collectives never overlap compute: one track per core.
  CHECK(thread_names.size() == static_cast<std::size_t>(cores));
  check_no_overlap_within_threads(r.trace);

  // Counters sit in their chip's process: link utilisation named after the link, and the HBM
  // bytes live on each traced core.
  int link_counters = 0, hbm_counters = 0;
  const int per_chip = cores / chips;
  for (const auto& e : r.trace["traceEvents"]) {
    if (e["ph"] != "C") continue;
    const int pid = e["pid"];
    CHECK(process_names.count(pid) == 1);
    const std::string name = e["name"];
    if (e["args"].contains("utilization")) {
      ++link_counters;
      // On its chip's process, named by its place in the chip (ici.x+, onchip.0to1).
      CHECK_THAT(name, Catch::StartsWith("ici.") || Catch::StartsWith("onchip."));
      const double u = e["args"]["utilization"];
      CHECK(u >= 0);
      CHECK(u <= 1);
    } else {
      ++hbm_counters;
      REQUIRE_THAT(name, Catch::StartsWith("HBM live GiB, core "));
      CHECK(std::stoi(name.substr(name.rfind(' ') + 1)) / per_chip == pid);
      CHECK(e["args"]["GiB"].get<double>() >= 0);
    }
  }
  CHECK(link_counters > 0);
  CHECK(hbm_counters > 0);
}

TEST_CASE("async collectives that overlap compute get their own tracks per core") {
  const Run r = run_with_timeline("async.json", {"--set", "hardware.async_collectives=true"});
  // Overlap exists in this run: some collective span intersects a compute span of its core.
  std::map<int, std::vector<std::pair<double, double>>> compute_of;
  for (const auto& e : r.trace["traceEvents"])
    if (e["ph"] == "X" && !is_collective(e))
      compute_of[e["args"]["core"].get<int>()].emplace_back(
          e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
  std::map<std::pair<int, int>, std::string> thread_name;
  for (const auto& e : r.trace["traceEvents"])
    if (e["name"] == "thread_name")
      thread_name[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
  bool overlapping = false;
  for (const auto& e : r.trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const int core = e["args"]["core"];
    const std::string& name = thread_name.at({e["pid"].get<int>(), e["tid"].get<int>()});
    // Compute on "core N"; collectives on "core N collectives[ k]" when they overlap anything.
    if (!is_collective(e)) {
      CHECK(name == "core " + std::to_string(core));
      continue;
    }
    const double s = e["ts"], t = s + e["dur"].get<double>();
    for (const auto& [a, b] : compute_of[core]) overlapping |= s < b && a < t;
    CHECK_THAT(name, Catch::StartsWith("core " + std::to_string(core) + " collectives"));
  }
  CHECK(overlapping);
  check_no_overlap_within_threads(r.trace);
}

TEST_CASE("a timeline named .gz is gzip-compressed and holds the same events") {
  auto gz = run_tpusim({"run", kCliTimelineStudy, "--set", kCliTimelineLayers, "--timeline",
                        timeline_tmp("t.json.gz")});
  auto plain = run_tpusim({"run", kCliTimelineStudy, "--set", kCliTimelineLayers, "--timeline",
                           timeline_tmp("t.json")});
  REQUIRE(gz.exit_code == 0);
  REQUIRE(plain.exit_code == 0);
  const std::string bytes = slurp(timeline_tmp("t.json.gz"));
  REQUIRE(bytes.size() > 2);
  CHECK(static_cast<unsigned char>(bytes[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(bytes[1]) == 0x8b);
  CHECK(json::parse(tpusim::trace::read_file_maybe_gzip(timeline_tmp("t.json.gz"))) ==
        json::parse(slurp(timeline_tmp("t.json"))));
  std::remove(timeline_tmp("t.json.gz").c_str());
  std::remove(timeline_tmp("t.json").c_str());
}

TEST_CASE("a large machine's timeline samples the first, middle and last chip and says so") {
  // 64 chips, 128 cores: more than the 64 cores traced in full by default.
  auto r = run_tpusim({"run", "configs/studies/bert_large_64.json", "--json", "--timeline",
                       timeline_tmp("big.json")});
  REQUIRE(r.exit_code == 0);
  const json report = json::parse(r.out);
  const json trace = json::parse(slurp(timeline_tmp("big.json")));
  std::remove(timeline_tmp("big.json").c_str());
  const int chips = report["chips"], per_chip = report["cores"].get<int>() / chips;
  REQUIRE(report["cores"].get<int>() > 64);
  std::vector<int> expected;
  for (int chip : {0, chips / 2, chips - 1})
    for (int k = 0; k < per_chip; ++k) expected.push_back(chip * per_chip + k);
  CHECK(trace["otherData"]["traced_cores"].get<std::vector<int>>() == expected);
  CHECK(trace["otherData"]["traced_chips"].get<std::vector<int>>() ==
        std::vector<int>{0, chips / 2, chips - 1});
  std::set<int> pids;
  for (const auto& e : trace["traceEvents"]) pids.insert(e["pid"].get<int>());
  CHECK(pids == std::set<int>{0, chips / 2, chips - 1});
}

TEST_CASE("a symmetric run's timeline of the cores asked for equals the full simulation's") {
  // 64 chips (8 x 8): the symmetric domain is part of the machine, and cores 70 to 73 and 127
  // lie outside it, so their spans and their chips' link counters are their images', translated.
  const std::string cores = "0,1,70-73,127";
  json trace[2], report[2];
  const char* modes[2] = {"sim.symmetry=auto", "sim.symmetry=off"};
  for (int m = 0; m < 2; ++m) {
    const std::string file = timeline_tmp(std::string("sym") + std::to_string(m) + ".json");
    auto r = run_tpusim({"run", "configs/studies/bert_large_64.json", "--json", "--set",
                         kCliTimelineLayers, "--set", modes[m], "--timeline", file,
                         "--timeline-cores", cores});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    report[m] = json::parse(r.out);
    trace[m] = json::parse(slurp(file));
    std::remove(file.c_str());
  }
  REQUIRE(report[0]["simulation"].get<std::string>().rfind("symmetric", 0) == 0);
  REQUIRE(report[1]["simulation"].get<std::string>().rfind("full", 0) == 0);
  CHECK(trace[0]["otherData"]["traced_cores"].get<std::vector<int>>() ==
        std::vector<int>{0, 1, 70, 71, 72, 73, 127});
  std::multiset<std::string> events[2];
  for (int m = 0; m < 2; ++m)
    for (const auto& e : trace[m]["traceEvents"]) events[m].insert(e.dump());
  CHECK(events[0].size() > 1000);
  CHECK(events[0] == events[1]);
  CHECK(trace[0]["otherData"] == trace[1]["otherData"]);
}

TEST_CASE("timeline cores outside the machine or malformed are one error line naming the option") {
  for (const char* bad : {"0,128", "0,a", "5-3", "1,1", ""}) {
    auto r = run_tpusim({"run", "configs/studies/bert_large_64.json", "--timeline",
                         timeline_tmp("bad.json"), "--timeline-cores", bad});
    INFO(bad << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--timeline-cores") != std::string::npos);
  }
}
