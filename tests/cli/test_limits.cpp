// Hostile inputs of issue 15, run as a user would: each ends quickly with exit 2 and a message
// that names the limit of core/limits.hpp it passes (docs/limits.md), never a hang, a crash, an
// unbounded allocation or a wrong number with exit 0.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/run_tpusim.hpp"
#include "tests/cli/trace_text.hpp"
#include "traces/format/file_bytes.hpp"

namespace {
namespace fs = std::filesystem;

std::string tmp(const std::string& name) {
  return "/tmp/tpusim_cli_limits_" + std::to_string(::getpid()) + "_" + name;
}
void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// Runs tpusim; requires exit 2 with `limit` named on stderr, within `max_s` seconds of wall time
/// (generous: the sanitizer build and a loaded machine are slower than the 10 s of the issue).
void require_refused(const std::vector<std::string>& args, const std::string& limit,
                     double max_s = 60, const std::string& env = "") {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_tpusim_env(env, args);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(limit));
  CHECK_THAT(r.err, Catch::StartsWith("tpusim: error: "));
  CHECK(s < max_s);
}

const std::string kBigOp =
    R"({"name": "a", "kind": "k", "phase": "forward", "dtype": "bf16",
        "compute": {"flops": 1, "bytes_read": 1, "bytes_written": 1, "measured_ns": 1e16}})";
const std::string kAllReduce =
    R"({"name": "r", "kind": "all-reduce", "phase": "backward", "dtype": "bf16", "deps": [0],
        "collective": {"bytes": 4096, "axes": ["data"]}})";
std::string compute_op(const std::string& field, const std::string& value) {
  nlohmann::json op = nlohmann::json::parse(
      R"({"name": "a", "kind": "k", "phase": "forward", "dtype": "bf16",
          "compute": {"flops": 1, "bytes_read": 1, "bytes_written": 1}})");
  op["compute"][field] = nlohmann::json::parse(value);
  return op.dump();
}
}  // namespace

TEST_CASE("a step longer than the kernel's clock is refused before simulating") {
  // 1e9 sequences do not fit in HBM either (exit 1); --allow-oom goes on to the time limit.
  require_refused({"run", "configs/studies/bert_large_16.json", "--set",
                   "workload.global_batch=1e9", "--set", "hardware.clock_MHz=80", "--allow-oom"},
                  "limit");
}

TEST_CASE("a trace op of 1e16 ns is refused, with or without a collective after it") {
  const std::string with = tmp("long_ar.json"), without = tmp("long.json");
  write(with, trace_with(kBigOp + "," + kAllReduce));
  write(without, trace_with(kBigOp));
  for (const auto& f : {with, without})
    require_refused({"replay", f, "--topology", "2x2", "--durations", "measured"},
                    "kMaxSimulatedSeconds");
  fs::remove(with);
  fs::remove(without);
}

TEST_CASE("trace sizes and FLOPs past what the model holds are refused, naming the field") {
  const std::string f = tmp("sizes.json");
  for (const auto& [field, value, limit] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"bytes_read", "1e19", "kMaxBytes"},
           {"bytes_written", "2e15", "kMaxBytes"},
           {"flops", "1e300", "kMaxOpFlops"}}) {
    write(f, trace_with(compute_op(field, value)));
    require_refused({"trace", "info", f}, "ops[0].compute." + field);
    require_refused({"replay", f, "--topology", "2x2"}, limit);
  }
  fs::remove(f);
}

TEST_CASE("a profile event of 1e13 us is refused at import") {
  const std::string f = tmp("profile.json");
  write(f, R"({"traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:TPU:0"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "XLA Ops"}},
    {"ph": "X", "name": "fusion", "pid": 1, "tid": 2, "ts": 0, "dur": 1e13}]})");
  require_refused({"trace", "import", f, "--out", tmp("imported.json")}, "kMaxSimulatedSeconds");
  fs::remove(f);
}

TEST_CASE("collective sizes past kMaxBytes are refused rather than wrapped") {
  for (const char* bytes : {"8e17", "2e15"})
    require_refused({"collective", "--op", "all-reduce", "--bytes", bytes, "--topology", "2x2"},
                    "kMaxBytes");
}

TEST_CASE("a direct all-to-all over the Multipod is refused before its plan is built") {
  // 8192 x 8191 transfers, past kMaxCollectiveTransfers = 2^21. (auto runs it per dimension:
  // tests/cli/test_scale.cpp.)
  require_refused({"collective", "--op", "all-to-all", "--bytes", "1", "--topology",
                   "tpu_v3_multipod", "--set", "collectives.all_to_all_algorithm=direct"},
                  "kMaxCollectiveTransfers", 30);
}

TEST_CASE("issue 51: an all-to-all in tiny packets is refused before elaboration") {
  // A direct all-to-all's crossing flows cut the trains into single packets, an event per hop.
  // 1 GiB x 32 cores / 16 B x 2 mean hops (4x4 torus) = 4.3e9 packet-hops, past
  // kMaxAllToAllPacketHops (this input used to run until 2^23 packets were in flight one by one,
  // kMaxPackets, which stays as the packet level's backstop). (A 1 GiB all-reduce in 16-byte
  // packets travels as packet trains and gives a result: tests/cli/test_scale.cpp.)
  require_refused({"collective", "--op", "all-to-all", "--bytes", "1GiB", "--topology", "4x4",
                   "--set", "collectives.all_to_all_algorithm=direct", "--set",
                   "network.fidelity=packet", "--set", "network.packet_bytes=16"},
                  "kMaxAllToAllPacketHops", 30);
}

TEST_CASE("issue 51: the packet-level all-to-alls of a minute are refused, naming what fits") {
  // slow_inputs.sh case 3 (62 s): 1 MiB x 128 cores / 16 B x 4 mean hops (8x8 torus) = 2^25
  // packet-hops, past 2.4e7; 32-byte packets make 2^24.
  const std::vector<std::string> a2a = {"collective", "--op",  "all-to-all",
                                        "--bytes",    "1MiB",  "--topology",
                                        "8x8",        "--set", "network.fidelity=packet"};
  auto with = [&](const char* bytes) {
    auto v = a2a;
    v.insert(v.end(), {"--set", std::string("network.packet_bytes=") + bytes});
    return v;
  };
  require_refused(with("16"), "kMaxAllToAllPacketHops", 30);
  const auto r = run_tpusim(with("16"));
  CHECK_THAT(r.err, Catch::Contains("network.packet_bytes=32 or more, or network.fidelity=flow"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  // slow_inputs.sh case 2 (163 s): the decoder's sequence all-to-alls, 2.5 GiB a device over 16
  // devices at 256 B x 2 mean hops (4x4 torus) = 3.4e8 packet-hops; 4096 B (the default) fits.
  const std::vector<std::string> decoder = {"run",
                                            "configs/studies/decoder_1b_16.json",
                                            "--set",
                                            "parallelism.model=1",
                                            "--set",
                                            "parallelism.fsdp=1",
                                            "--set",
                                            "parallelism.sequence=16",
                                            "--set",
                                            "parallelism.sequence_attention=all_to_all",
                                            "--set",
                                            "network.fidelity=packet",
                                            "--allow-oom",
                                            "--set",
                                            "network.packet_bytes=256"};
  require_refused(decoder, "network.packet_bytes=4096 or more", 30);
}

TEST_CASE("a .gz that inflates past kMaxTraceFileBytes stops inflating there") {
  // Gzip members may be concatenated: 1 MiB of spaces compressed once, written 600 times,
  // inflates to 600 MiB (past 512 MiB) from a file of a few hundred KB.
  const std::string member = tpusim::trace::gzip(std::string(1 << 20, ' '));
  const std::string f = tmp("spaces.json.gz");
  {
    std::ofstream out(f, std::ios::binary);
    for (int i = 0; i < 600; ++i) out << member;
  }
  require_refused({"trace", "info", f}, "kMaxTraceFileBytes");
  fs::remove(f);
  // Issue 25: refused near the limit's own size in memory (it took 1.08 GB: the string doubled
  // past it). ru_maxrss of the children this test process waited for, in KiB.
  // AddressSanitizer's allocator and shadow memory add their own (850 MB measured), so the bound
  // holds for the uninstrumented build, which the Release run of the test command checks.
  if (kAddressSanitizer)
    WARN("peak RSS " << peak_child_rss_mib() << " MiB under AddressSanitizer: not checked");
  else
    CHECK(peak_child_rss_mib() < 800);
}

TEST_CASE("a sweep of more points than kMaxSweepPoints is refused before expanding any") {
  const std::string dir = tmp("sweep");
  fs::create_directories(dir);
  // 12 axes of 10 values: 10^12 points.
  nlohmann::json sweep = {
      {"base", {{"preset", "tpu_v3"}, {"workload", {{"model", "bert_large"}}}}}};
  for (const char* path :
       {"hardware.ici.latency_ns", "hardware.ici.bandwidth_GBps", "hardware.hbm.latency_ns",
        "hardware.hbm.bandwidth_GBps_per_core", "hardware.onchip.latency_ns",
        "hardware.onchip.bandwidth_GBps", "hardware.calibration.op_overhead_ns",
        "hardware.calibration.collective_step_overhead_ns", "hardware.clock_MHz",
        "hardware.mxu.fill_drain_cycles", "hardware.mxu.weight_load_cycles",
        "hardware.slow_chip_factor"}) {
    nlohmann::json values = nlohmann::json::array();
    for (int v = 1; v <= 10; ++v) values.push_back(v);
    sweep["axes"].push_back({{"path", path}, {"values", values}});
  }
  write(dir + "/s.json", sweep.dump());
  require_refused({"sweep", dir + "/s.json", "--out", dir + "/out"}, "kMaxSweepPoints", 30);
  fs::remove_all(dir);
}

TEST_CASE("deeply nested sweep expressions are refused, not a stack overflow") {
  const std::string dir = tmp("expr");
  fs::create_directories(dir);
  std::string minus(21000, '-'), chain = "1";
  for (int i = 0; i < 33000; ++i) chain += "+1";
  for (const std::string& expr :
       {std::string(20000, '(') + "1" + std::string(20000, ')'), minus + "1", chain}) {
    nlohmann::json sweep = {
        {"base", {{"preset", "tpu_v3"}, {"workload", {{"model", "bert_large"}}}}},
        {"axes",
         {{{"path", "topology"}, {"values", {"2x2"}}},
          {{"path", "workload.global_batch"}, {"expr", expr}}}}};
    write(dir + "/s.json", sweep.dump());
    require_refused({"sweep", dir + "/s.json", "--out", dir + "/out"}, "kMaxExprDepth", 30);
  }
  fs::remove_all(dir);
}

TEST_CASE("presets that fan out are refused after kMaxPresetFiles files") {
  // p0 includes p1 under three keys, p1 includes p2 under three keys, ...: 3^15 files if followed.
  const std::string dir = tmp("presets");
  fs::create_directories(dir);
  for (int i = 0; i < 16; ++i) {
    nlohmann::json p = nlohmann::json::object();
    if (i < 15)
      for (const char* k : {"a", "b", "c"}) p[k] = {{"preset", "p" + std::to_string(i + 1)}};
    write(dir + "/p" + std::to_string(i) + ".json", p.dump());
  }
  write(dir + "/study.json", R"({"preset": "p0"})");
  require_refused({"validate", dir + "/study.json"}, "kMaxPresetFiles", 30,
                  "TPUSIM_CONFIG_DIR=" + shell_quote(dir));
  fs::remove_all(dir);
}

TEST_CASE("a second sweep or plan into a directory in use stops at once") {
  const std::string dir = tmp("locked");
  fs::create_directories(dir);
  // This test holds the lock a running sweep would hold.
  const int fd = ::open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  require_refused({"sweep", "configs/studies/sweeps/bert_weak_scaling.json", "--out", dir},
                  "another tpusim sweep", 30);
  // A layout search keeps its points in the same kind of directory, under the same lock.
  require_refused({"plan", "configs/studies/bert_large_16.json", "--out", dir},
                  "another tpusim sweep, merge or plan", 30);
  ::close(fd);
  fs::remove_all(dir);
}

TEST_CASE("the example profile rescaled to the Multipod is refused with a direct all-to-all") {
  // Its all-to-all spans every device: direct over 8192 cores is past kMaxCollectiveTransfers
  // (per dimension it replays: tests/cli/test_scale.cpp). (The hand-made profile claims more
  // FLOPs than a core's peak allows in two ops' durations; --log-level error leaves out that
  // warning.)
  require_refused({"replay", "traces/examples/profile_tpu_v3_8.trace.json", "--topology",
                   "tpu_v3_multipod", "--mesh", "data=2048,model=4", "--set",
                   "collectives.all_to_all_algorithm=direct", "--log-level", "error"},
                  "kMaxCollectiveTransfers", 30);
}

TEST_CASE("issue 25: an all-to-all over 32,768 cores is refused before its plan is built") {
  // 128 x 128 chips, 2 cores each, one group of all 32768 cores: the plan auto chooses would hold
  // about 1.07e9 point-to-point transfers, each with its route, past kMaxCollectiveTransfers =
  // 2^21 summed over the plan (not per line). (A 256 x 256 torus is refused the same way, after
  // four times the elaboration.)
  require_refused({"collective", "--op", "all-to-all", "--bytes", "1MiB", "--topology", "128x128"},
                  "kMaxCollectiveTransfers", 120);
}

TEST_CASE("issue 25: a device loop past kMaxLoopOps is refused before it is copied") {
  // A loop of a million training steps, all simulated: a million copies of the step's Program.
  require_refused(
      {"train", "configs/studies/ssd_v06_16.json", "--set", "train.target_steps=1000000", "--set",
       "train.target_epochs=0", "--set", "train.eval_every_steps=1000000", "--set",
       "train.eval_every_epochs=0", "--set", "train.simulated_train_steps=1000000"},
      "kMaxLoopOps", 30);
}

TEST_CASE("issue 25: tiny packets on a big collective are refused before elaboration") {
  // 2 x 64 MiB x 4096 cores / 16 B = 3.4e10 packets, past kMaxInjectedPackets = 2^33.
  require_refused({"collective", "--op", "all-reduce", "--bytes", "64MiB", "--topology", "32x64",
                   "--set", "network.fidelity=packet", "--set", "network.packet_bytes=16"},
                  "kMaxInjectedPackets", 30);
}

TEST_CASE("issue 25: a plan space past kMaxPlanLayouts is refused before any layout is built") {
  // BERT on 4x4 (32 cores): 6 model degrees x 2 x 2 x 900 bucket sizes = 21,600 layouts, past
  // kMaxPlanLayouts = 20,000 (before, such a space was enumerated and checked for minutes).
  std::string buckets = "parallelism.grad_bucket_MiB=";
  for (int b = 1; b <= 900; ++b) buckets += (b > 1 ? "," : "") + std::to_string(b);
  require_refused(
      {"plan", "configs/studies/bert_large_16.json", "--space", buckets, "--out", tmp("plan")},
      "kMaxPlanLayouts", 30);
  CHECK(!fs::exists(tmp("plan")));
}
