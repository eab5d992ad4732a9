// Issue 51: runs against hostile inputs: each ends with exit 0, 1 or 2 and one clear line, within
// its bound of time and memory, never by a signal or exit 3.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "tests/cli/trace_text.hpp"
#include "tests/cli_hostile/hostile.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {
const std::string kBert16 = "configs/studies/bert_large_16.json";
const std::string kResnet16 = "configs/studies/resnet50_16.json";

/// The small BERT study's `command` with `extra` (2x2 chips, 8 cores, well under a second).
std::vector<std::string> small_run(std::vector<std::string> extra,
                                   const std::string& command = "run") {
  std::vector<std::string> args{command,        kBert16, "--set",
                                "topology=2x2", "--set", "workload.global_batch=8"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}
}  // namespace

TEST_CASE("issue 51: an epoch cadence or target of less than one step is refused (was SIGFPE)") {
  check_bad({"train", kResnet16, "--set", "train.eval_every_epochs=1e-9"},
            "train.eval_every_epochs");
  check_bad({"train", kResnet16, "--set", "train.target_epochs=1e-9", "--set",
             "train.eval_every_epochs=1e-9"},
            "train.target_epochs");
  // Accepted before as a target of 0 steps ("trains" in 1.04 s).
  check_bad({"train", kResnet16, "--set", "train.target_epochs=1e-9"}, "train.target_epochs");
  // As a sweep axis: refused while the sweep validates its points, nothing run.
  SweepScratch s;
  const auto sweep = s.write(
      "fpe.json", {{"base", std::string(TPUSIM_SOURCE_DIR) + "/" + kResnet16},
                   {"command", "train"},
                   {"axes", {{{"path", "train.eval_every_epochs"}, {"values", {4, 1e-9}}}}}});
  const auto r = run_tpusim({"sweep", sweep, "--out", s.path("o")});
  check_bad_input(r, "train.eval_every_epochs");
  CHECK(!fs::exists(s.path("o/results.csv")));
}

TEST_CASE("issue 51: infeed threads past the chips of a host cost no memory (was 4.3 GB)") {
  // 64 hosts of 8 chips (16x32 chips). Before, each host kept one record per thread: 2^20 threads
  // x 64 hosts x 8 bytes = 537 MB (the run's peak was 590 MB); now one per chip (33 MB).
  const std::vector<std::string> train{"train",
                                       kBert16,
                                       "--json",
                                       "--set",
                                       "topology=16x32",
                                       "--set",
                                       "workload.global_batch=1024",
                                       "--set",
                                       "train.target_steps=10",
                                       "--set",
                                       "train.eval_every_steps=10",
                                       "--set",
                                       "train.eval_examples=1024"};
  const auto few = run_tpusim(with_sets(train, {"hardware.host.infeed_threads=8"}));
  INFO(few.err);
  REQUIRE(few.exit_code == 0);
  const auto many = run_tpusim(with_sets(train, {"hardware.host.infeed_threads=1048576"}));
  INFO(many.err);
  REQUIRE(many.exit_code == 0);
  check_peak_rss_below(300);
  // A host feeds 8 chips: 8 threads or 2^20 copy the same (all of a batch's copies at once).
  CHECK(json::parse(many.out)["time_to_train_s"] == json::parse(few.out)["time_to_train_s"]);
}

TEST_CASE("issue 51: a timeline of many cores is refused before the run, naming its limit") {
  const auto r = run_tpusim({"run", "configs/studies/bert_large_1024.json", "--timeline",
                             "/dev/null", "--timeline-all-up-to", "2048"});
  check_bad_input(r, "--timeline-all-up-to 2048");
  CHECK_THAT(r.err, Catch::Contains("kMaxTimelineSpans"));
}

TEST_CASE("issue 51: train --timeline over 10^7 loops draws 1,000 and one span for the rest") {
  // Before, 10^7 loops were three spans each: bad_alloc after 31 s. Now 6 MB and 110 MB of memory.
  SweepScratch s;
  const std::string tl = s.path("t.json");
  const auto r =
      run_tpusim(small_run({"--timeline", tl, "--json", "--set", "train.target_steps=10000000",
                            "--set", "train.eval_every_steps=1", "--set", "train.eval_examples=32"},
                           "train"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_peak_rss_below(1000);
  CHECK(fs::file_size(tl) < 20000000);
  const json t = json::parse(slurp(tl));
  int loops = 0;
  std::string rest;
  for (const auto& e : t["traceEvents"])
    if (e.value("cat", "") == "device_loop") {
      ++loops;
      if (e["args"].contains("loops")) rest = e["name"].get<std::string>();
    }
  CHECK(loops == 1001);
  CHECK_THAT(rest, Catch::StartsWith("loops 1001 to 10000000"));
  // The rest's span ends where the run ends (time to train, after the program start); the run's
  // tracks are the process after the 4 chips'.
  double end_us = 0;
  for (const auto& e : t["traceEvents"])
    if (e.value("ph", "") == "X" && e.value("pid", -1) == 4)
      end_us = std::max(end_us, e["ts"].get<double>() + e["dur"].get<double>());
  CHECK(end_us * 1e-6 == Approx(json::parse(r.out)["time_to_train_s"].get<double>()).epsilon(1e-6));
}

TEST_CASE("issue 51: Chakra export of 2^24 ranks is refused, a failed export leaves no file") {
  SweepScratch s;
  auto r = run_tpusim({"trace", "export", hostile_fixture("mesh16M.trace.json"), "--format",
                       "chakra", "--out", s.path("ex")});
  check_bad_input(r, "kMaxChakraRanks");
  CHECK((!fs::exists(s.path("ex")) || fs::is_empty(s.path("ex"))));
  // Rank 3's file cannot be written (a folder holds its name): the files of ranks 0 to 2 go too.
  std::ofstream(s.path("t.json")) << trace_with(
      R"({"name": "a", "kind": "matmul", "phase": "forward", "dtype": "bf16",
          "compute": {"flops": 1000, "bytes_read": 100, "bytes_written": 100}})");
  fs::create_directories(s.path("ex2/tpusim.3.et"));
  r = run_tpusim(
      {"trace", "export", s.path("t.json"), "--format", "chakra", "--out", s.path("ex2")});
  check_bad_input(r, "tpusim.3.et");
  for (int rank : {0, 1, 2, 4})
    CHECK(!fs::exists(s.path("ex2/tpusim." + std::to_string(rank) + ".et")));
}

TEST_CASE("issue 51: MXU parameters faster than the array's peak are refused, MFU <= HFU <= 1") {
  check_bad(small_run({"--set", "hardware.mxu.dim=8", "--set", "hardware.mxu.rows_per_pass=1024"}),
            "hardware.mxu.rows_per_pass");
  check_bad(small_run({"--set", "hardware.mxu.rows_per_pass=1024", "--set",
                       "hardware.mxu.pass_cycles=1"}),
            "allowed: at most hardware.mxu.pass_cycles (1)");
  // In range: a small array, one row a cycle, fast memory, no op overhead.
  const auto r = run_tpusim(
      small_run({"--json", "--set", "hardware.mxu.dim=8", "--set", "hardware.mxu.rows_per_pass=8",
                 "--set", "hardware.calibration.op_overhead_ns=0", "--set",
                 "hardware.hbm.bandwidth_GBps_per_core=1000000"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["mfu"].get<double>() <= j["hfu"].get<double>() * (1 + 1e-9));
  CHECK(j["hfu"].get<double>() <= 1);
}

TEST_CASE("issue 51: a topology object without wrap wraps as its shape, named by it") {
  SweepScratch s;
  const auto study =
      s.write("dims.json", {{"preset", "tpu_v3"},
                            {"topology", {{"dims", {32, 32}}}},
                            {"workload", {{"model", "bert_large"}, {"global_batch", 2048}}},
                            {"parallelism", {{"weight_update_sharding", true}}}});
  auto r = run_tpusim({"validate", study, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json topo = json::parse(r.out)["config"]["topology"];
  CHECK(topo["wrap"] ==
        json({true, true}));  // as the shape 32x32, not the Multipod's [false, true]
  CHECK(topo["name"] == "32x32");
  // docs/studies.md's twisted torus, without wrap: a 3D slice's dimensions of 4 or more wrap.
  const auto twist = s.write(
      "twist.json",
      {{"preset", "tpu_v4"},
       {"topology", {{"dims", {4, 4, 8}}, {"twist", true}}},
       {"workload", {{"model", "bert_large"}, {"global_batch", 256}}},
       {"parallelism", {{"model", 1}, {"weight_update_sharding", true}, {"grad_dtype", "bf16"}}}});
  r = run_tpusim({"validate", twist, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.out)["config"]["topology"]["wrap"] == json({true, true, true}));
  // A given wrap of the wrong length is still an error naming it.
  check_bad({"validate", kBert16, "--set", "topology.dims=[4,4,1]"}, "topology.wrap");
}

TEST_CASE("issue 51: collective --algorithm is never ignored") {
  auto algorithm = [](const std::vector<std::string>& extra) {
    std::vector<std::string> args{"collective", "--op",    "all-to-all", "--topology",
                                  "4x4",        "--bytes", "1MiB",       "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_tpusim(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out)["algorithm"].get<std::string>();
  };
  CHECK_THAT(algorithm({"--algorithm", "per_dimension"}), Catch::Contains("per_dimension"));
  CHECK_THAT(algorithm({"--algorithm", "direct"}), Catch::Contains("direct"));
  for (const char* a : {"ring", "one_shot", "recursive_doubling"})
    check_bad({"collective", "--op", "all-to-all", "--topology", "4x4", "--bytes", "1MiB",
               "--algorithm", a},
              "collectives.all_to_all_algorithm");
  check_bad({"collective", "--op", "collective-permute", "--topology", "4x4", "--bytes", "1MiB",
             "--algorithm", "ring"},
            "--algorithm ring");
}

TEST_CASE("issue 51: collective over slices runs an all-reduce across them, refuses the others") {
  // Without --axes the all-reduce spans every core of every slice: the DCN carries its middle
  // phase (was one slice's all-reduce under a header of 4 slices, the same time as one slice).
  auto json_of = [](const std::vector<std::string>& sets) {
    const auto r = run_tpusim(with_sets(
        {"collective", "--op", "all-reduce", "--topology", "4x4", "--bytes", "1MiB", "--json"},
        sets));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
  };
  const json one = json_of({}), four = json_of({"topology.slices=4", "parallelism.slices=4"});
  CHECK_THAT(four["algorithm"].get<std::string>(), Catch::Contains("dcn_ring"));
  CHECK(four["dcn_bytes_per_chip"].get<double>() > 0);
  CHECK(four["collective_time_ns"].get<double>() > one["collective_time_ns"].get<double>());
  for (const char* op : {"all-to-all", "all-gather", "reduce-scatter", "collective-permute"})
    check_bad({"collective", "--op", op, "--topology", "4x4", "--bytes", "1MiB", "--set",
               "topology.slices=4"},
              "topology.slices");
}

TEST_CASE("issue 51: hardware.host.chip_block=[] is refused") {
  check_bad({"train", "configs/studies/bert_large_16.json", "--set", "hardware.host.chip_block=[]",
             "--set", "train.target_steps=10", "--set", "train.eval_every_steps=10", "--set",
             "train.eval_examples=32"},
            "hardware.host.chip_block");
}

TEST_CASE("issue 51: an output through a dangling symlink is checked before the run") {
  SweepScratch s;
  fs::create_symlink("nonexist/x.json", s.path("dangle.json"));
  const auto r = run_tpusim(small_run({"--timeline", s.path("dangle.json")}));
  check_bad_input(r, "dangle.json");
  CHECK_THAT(r.err, Catch::Contains("does not exist"));
  CHECK(r.out.empty());  // refused before the run, not after it
  // A dangling symlink into an existing folder is written through: the link's target is created.
  fs::create_symlink("made.json", s.path("link.json"));
  const auto ok = run_tpusim(small_run({"--timeline", s.path("link.json")}));
  INFO(ok.err);
  REQUIRE(ok.exit_code == 0);
  CHECK(fs::is_symlink(s.path("link.json")));
  CHECK(fs::file_size(s.path("made.json")) > 0);
}

TEST_CASE("issue 51: a 255-character output name is written (its temporary name fits)") {
  SweepScratch s;
  const std::string name = s.path(std::string(250, 'g') + ".json");
  const auto r = run_tpusim(small_run({"--timeline", name}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(fs::file_size(name) > 0);
  for (const auto& e : fs::directory_iterator(s.dir))  // no temporary file left
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("issue 51: a closed pipe or a full disk on stdout is exit 2 with its line") {
  SweepScratch s;
  const std::string bin = "'" + std::string(TPUSIM_BIN) + "'";
  // The reader goes after one byte: the rest of the report meets a closed pipe (was SIGPIPE, 141).
  auto r = run_shell(s.dir, "(" + bin + " run " + kBert16 +
                                " --set topology=2x2 --set workload.global_batch=8 --top 100000 "
                                "--json; echo $? > " +
                                s.path("rc") + ") | head -c 1 >/dev/null");
  CHECK(std::stoi(slurp(s.path("rc"))) == 2);
  CHECK_THAT(r.err, Catch::Contains("tpusim: error: stdout: cannot write the output"));
  for (const char* args : {"--version", "run --help", "--help"}) {
    r = run_shell(s.dir, bin + " " + args + " > /dev/full");
    INFO(args);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("stdout: cannot write the output: No space left on device"));
  }
}

TEST_CASE("issue 51: a FIFO output without a reader is an error after 2 s, not a hang") {
  SweepScratch s;
  REQUIRE(mkfifo(s.path("fifo").c_str(), 0600) == 0);
  const auto r = run_shell(s.dir, "timeout 60 '" + std::string(TPUSIM_BIN) + "' run " + kBert16 +
                                      " --set topology=2x2 --set workload.global_batch=8 "
                                      "--links-csv " +
                                      s.path("fifo"));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("no process opened this FIFO for reading"));
}

TEST_CASE("issue 51: the low-severity silent defaults are refused, naming the value") {
  check_bad(
      small_run({"--set", "hardware.slow_chips=[0,0]", "--set", "hardware.slow_chip_factor=2"}),
      "hardware.slow_chips");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "64MiB", "--topology", "4x4", "--set",
             "network.failed_links=multipod.chip(0,0).ici.x+", "--set",
             "network.degraded_links=multipod.chip(0,0).ici.x+=0.5"},
            "not both");
  check_bad(small_run({"--set", "parallelism.model=2", "--set", "parallelism.model=1"}),
            "--set parallelism.model");
  check_bad({"collective", "--op", "all-reduce", "--bytes", "64MiB", "--topology", "4x4", "--set",
             "network.degraded_links=multipod.chip(0,0).ici.x+=5e-324"},
            "allowed: from 1e-6 to 1");
  SweepScratch s;
  check_bad(small_run({"--timeline", s.path("same.out"), "--links-csv", s.path("same.out")}),
            "--links-csv");
  // "01" is the number 1: listed twice, not two runs of one layout.
  check_bad({"plan", kBert16, "--space", "parallelism.model=01,1", "--out", s.path("plan")},
            "listed twice");
  check_bad({"validate", "configs/studies/decoder_1b_16.json", "--set", "workload.positions=rotary",
             "--set", "workload.head_dim=3"},
            "workload.head_dim");
}

TEST_CASE("issue 51: bytes of user input that are not UTF-8 are escaped in the error line") {
  // A Latin-1 e-acute (0xE9), a lone continuation byte (0x80) and a terminal escape sequence in
  // a study's file name and in an option's value, both echoed in their errors: each byte
  // written as \xNN, the line kept one printable line.
  const std::string bad = std::string("caf\xE9\x80") + "\x1B[31m";
  for (const auto& args : {std::vector<std::string>{"validate", "/tmp/" + bad + ".json"},
                           small_run({"--log-level", bad})}) {
    auto r = run_tpusim(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("caf\\xE9\\x80\\x1B[31m"));
    for (unsigned char c : r.err) CHECK((c == '\n' || (c >= 0x20 && c < 0x7F)));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  // Valid UTF-8 is kept as it is.
  auto ok = run_tpusim({"validate", "/tmp/caf\xC3\xA9.json"});
  CHECK(ok.exit_code == 2);
  CHECK_THAT(ok.err, Catch::Contains("caf\xC3\xA9.json"));
}

TEST_CASE("issue 51: train of a decoder_lm study composes its training and eval steps") {
  // Item 28: `train` refused every language-model study (no eval program). One loop of 100
  // steps and one evaluation of one eval batch: the parts of the time to train follow from the
  // per-step times, the training step is `run`'s step and the forward-only eval step is shorter.
  const std::string study = "configs/studies/decoder_1b_16.json";
  auto t = run_tpusim({"train", study, "--set", "train.target_steps=100", "--set",
                       "train.eval_every_steps=100", "--set", "train.eval_examples=32", "--json"});
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  const json r = json::parse(t.out);
  CHECK(r["model"] == "decoder_lm");
  const auto& s = r["schedule"];
  REQUIRE(s["target_steps"] == 100);
  REQUIRE(s["evaluations"] == 1);
  const auto& step = r["per_step"];
  const auto& b = r["breakdown"];
  const double train_ms = step["train_step_ms"].get<double>();
  const double eval_ms = step["eval_step_ms"].get<double>();
  CHECK(eval_ms > 0);
  CHECK(eval_ms < train_ms);
  // The loop's first step may differ from the steady one: within 0.1 % over 100 steps.
  CHECK(b["training_s"].get<double>() == Approx(100 * train_ms / 1000).epsilon(1e-3));
  CHECK(b["evaluation_s"].get<double>() ==
        Approx(s["eval_steps_per_evaluation"].get<double>() * eval_ms / 1000).epsilon(1e-9));
  CHECK(r["time_to_train_s"].get<double>() ==
        Approx(b["startup_s"].get<double>() + b["training_s"].get<double>() +
               b["evaluation_s"].get<double>() + b["loop_round_trips_s"].get<double>() +
               b["input_stall_s"].get<double>() + b["host_eval_s"].get<double>())
            .epsilon(1e-9));
  auto one = run_tpusim({"run", study, "--json"});
  REQUIRE(one.exit_code == 0);
  CHECK(train_ms == Approx(json::parse(one.out)["step_time_ms"].get<double>()).epsilon(1e-3));
}

TEST_CASE("issue 51: the messages of item 30 name the key the user set and its declared range") {
  // Too many eval steps in a loop: the message names the eval steps, not the training ones.
  check_bad({"train", kBert16, "--set", "train.eval_examples=64", "--set", "train.target_steps=10",
             "--set", "train.eval_every_steps=10", "--set", "train.eval_steps=1000000", "--set",
             "train.simulated_eval_steps=1000000"},
            "train.simulated_eval_steps");
  // SSD's image size: the refusal quotes the range `tpusim params` declares for ssd.
  const auto params = run_tpusim({"params", "workload.image_size"});
  REQUIRE(params.exit_code == 0);
  CHECK_THAT(params.out, Catch::Contains("range 257 to 100000  [when workload.model=ssd]"));
  check_bad({"validate", "configs/studies/ssd_v06_16.json", "--set", "workload.image_size=64"},
            "expected an integer from 257 to 100000");
  // A folder given as the golden is named as a folder before any point runs.
  SweepScratch s;
  const auto sweep = bandwidth_sweep(s, {25});
  check_bad({"sweep", sweep, "--out", s.path("o"), "--check", s.path("")}, "is a folder");
  CHECK(!fs::exists(s.path("o")));
}
