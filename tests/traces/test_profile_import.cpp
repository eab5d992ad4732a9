// The profile importer on the example profiles in traces/examples (written by
// make_example_profiles.py): the expected values are the numbers written in those files.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "tests/traces/trace_test_programs.hpp"
#include "tests/unit/model_study.hpp"
#include "traces/format/file_bytes.hpp"
#include "traces/profile/profile_import.hpp"

using namespace tpusim;
using namespace tpusim::trace;
using tpusim::test::index_of;
using tpusim::test::op_named;
using tpusim::testing::example_trace_dir;

namespace {
bool has_warning(const ImportResult& r, const std::string& text) {
  for (const auto& w : r.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}
ImportResult import_v3_8(ImportOptions o = {}) {
  return import_profile_file(example_trace_dir() + "profile_tpu_v3_8.json", o);
}
}  // namespace

TEST_CASE("one step of the v3-8 profile gives its device ops in order with measured durations") {
  ImportOptions o;
  o.step = 0;
  const auto r = import_v3_8(o);
  const Program& p = r.program;
  CHECK(r.representative_tpu == 0);
  CHECK(r.tpu_devices == 8);
  CHECK(r.matching_devices == 8);
  // 14 events per step; the two -done events fold into their -start ops.
  REQUIRE(p.ops.size() == 12);
  CHECK(p.num_collectives() == 6);
  CHECK(p.mesh.size() == 1);
  CHECK(p.mesh[0].name == "data");
  CHECK(p.mesh[0].size == 8);
  const std::vector<std::string> order{"fusion.1",      "dot.2",
                                       "all-reduce.3",  "all-reduce-start.1",
                                       "fusion.5",      "reduce-scatter.6",
                                       "fusion.7",      "all-gather-start.2",
                                       "copy.8",        "collective-permute.9",
                                       "all-to-all.10", "fusion.11"};
  for (std::size_t i = 0; i < order.size(); ++i) CHECK(p.ops[i].name == order[i]);

  const Op& f1 = op_named(p, "fusion.1");
  CHECK(f1.kind == "fusion");
  CHECK(*f1.compute.measured_ns == Approx(120.5e3));  // dur 120.5 us on TPU:0
  CHECK(f1.compute.flops == 8589934592.0);
  CHECK(f1.compute.bytes_written == 8.0 * 512 * 1024 * 2);  // bf16[8,512,1024]
  CHECK(f1.compute.bytes_read == 18874368.0 - 8.0 * 512 * 1024 * 2);
  CHECK(f1.shapes == std::vector<std::vector<std::int64_t>>{{8, 512, 1024}});
  CHECK(*op_named(p, "dot.2").compute.measured_ns == Approx(80.25e3));
  CHECK(op_named(p, "copy.8").compute.flops == 0);  // no "flops" arg

  const auto& ar = op_named(p, "all-reduce.3").collective;
  CHECK(ar.kind == CollectiveKind::AllReduce);
  CHECK(ar.bytes == 1024.0 * 256 * 4);  // f32[1024,256]
  CHECK(ar.dtype == DType::F32);
  CHECK(ar.axes.empty());  // replica_groups = every device
  const auto& ars = op_named(p, "all-reduce-start.1").collective;
  CHECK(ars.bytes == 2048.0 * 1024 * 2);
  CHECK(ars.replica_groups ==
        std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}});  // no axis of data 8
  // reduce-scatter: the result bf16[128,1024] is one core's shard of 8; tpusim's size is the input.
  CHECK(op_named(p, "reduce-scatter.6").collective.bytes == 128.0 * 1024 * 2 * 8);
  // all-gather: the -done's result, not the -start's (operand, result) tuple.
  CHECK(op_named(p, "all-gather-start.2").collective.bytes == 1024.0 * 1024 * 2);
  const auto& perm = op_named(p, "collective-permute.9").collective;
  CHECK(perm.bytes == 8.0 * 128 * 2);
  CHECK(perm.shift == 1);
  CHECK(perm.wrap);
  CHECK(perm.axes.empty());
  // all-to-all: the "bytes" arg wins over its shape (bf16[16,1024] = 32 KiB).
  CHECK(op_named(p, "all-to-all.10").collective.bytes == 65536.0);
  CHECK(has_warning(r, "1 collectives carry no replica_groups"));
}

TEST_CASE("ops between an async -start and -done overlap it and the op after -done waits for it") {
  ImportOptions o;
  o.step = 0;
  const Program p = import_v3_8(o).program;
  const int start = index_of(p, "all-reduce-start.1");
  CHECK(p.ops[start].deps == std::vector<int>{index_of(p, "all-reduce.3")});
  CHECK(p.ops[index_of(p, "fusion.5")].deps == std::vector<int>{index_of(p, "all-reduce.3")});
  CHECK(p.ops[index_of(p, "reduce-scatter.6")].deps ==
        std::vector<int>{start, index_of(p, "fusion.5")});
  CHECK(p.ops[index_of(p, "collective-permute.9")].deps ==
        std::vector<int>{index_of(p, "all-gather-start.2"), index_of(p, "copy.8")});
}

TEST_CASE("with the job's mesh the profile's replica groups become mesh axes") {
  ImportOptions o;
  o.step = 1;
  o.mesh = {{"data", 2}, {"model", 4}};
  const Program p = import_v3_8(o).program;
  CHECK(op_named(p, "all-reduce-start.1").collective.axes == std::vector<std::string>{"model"});
  CHECK(op_named(p, "all-reduce-start.1").collective.replica_groups.empty());
  CHECK(op_named(p, "reduce-scatter.6").collective.bytes == 128.0 * 1024 * 2 * 8);
}

TEST_CASE("without --step every step is imported with a warning") {
  const auto r = import_v3_8();
  CHECK(r.program.ops.size() == 24);
  CHECK(has_warning(r, "holds 2 steps"));
  ImportOptions o;
  o.step = 2;
  CHECK_THROWS_WITH(import_v3_8(o), Catch::StartsWith("--step: 2 is not a step of /device:TPU:0"));
}

TEST_CASE("another device can be the representative and its durations are used") {
  ImportOptions o;
  o.step = 0;
  o.device = 3;
  const auto r = import_v3_8(o);
  CHECK(r.representative_tpu == 3);
  CHECK(*r.program.ops[0].compute.measured_ns == Approx((120.5 + 0.25 * 3) * 1e3));
}

TEST_CASE("the gzip profile imports the same Program as the plain one") {
  ImportOptions o;
  o.step = 0;
  const Program a = import_v3_8(o).program;
  const Program b =
      import_profile_file(example_trace_dir() + "profile_tpu_v3_8.json.gz", o).program;
  tpusim::testing::check_same_program(a, b);
}

TEST_CASE("collectives the profile does not size need --sizes and then take its values") {
  const std::string profile = example_trace_dir() + "profile_needs_sizes.json";
  CHECK_THROWS_WITH(
      import_profile_file(profile, {}),
      Catch::Contains("profile_needs_sizes.json: traceEvents[3] (all-reduce.2): no size") &&
          Catch::Contains("--sizes"));
  const std::string sizes_path = example_trace_dir() + "profile_needs_sizes.sizes.json";
  ImportOptions o;
  o.overrides = read_collective_overrides(
      trace::parse_json_text(read_file_maybe_gzip(sizes_path), sizes_path), sizes_path);
  const auto r = import_profile_file(profile, o);
  const Program& p = r.program;
  REQUIRE(p.ops.size() == 4);
  CHECK(p.ops[1].collective.bytes == 1048576);
  const auto& perm = p.ops[2].collective;
  CHECK(perm.bytes == 4096);
  CHECK(perm.dtype == DType::F32);
  CHECK(perm.axes == std::vector<std::string>{"data"});
  CHECK(perm.shift == 1);
  CHECK_FALSE(perm.wrap);
  CHECK(r.matching_devices == 1);
  CHECK(has_warning(r,
                    "/device:TPU:1 runs a different op sequence than /device:TPU:0 (first "
                    "difference at op 4: 'copy.5' vs the end)"));
  CHECK(has_warning(r, "no element type"));
}

namespace {
std::string import_error(const nlohmann::json& doc, ImportOptions o = {}) {
  try {
    import_profile(doc, "profile.json", o);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}
nlohmann::json tiny_profile() {
  return nlohmann::json::parse(R"({"traceEvents": [
    {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:TPU:0"}},
    {"ph": "M", "pid": 1, "tid": 3, "name": "thread_name", "args": {"name": "XLA Ops"}},
    {"ph": "X", "pid": 1, "tid": 3, "ts": 10.0, "dur": 5.0, "name": "fusion.1", "args": {"flops": "100"}},
    {"ph": "X", "pid": 1, "tid": 3, "ts": 16.0, "dur": 2.0, "name": "all-reduce.2",
     "args": {"long_name": "%all-reduce.2 = f32[16]{0} all-reduce(f32[16]{0} %fusion.1), replica_groups={{0}}"}}]})");
}
}  // namespace

TEST_CASE("bad profiles are ConfigErrors naming the event") {
  CHECK(import_error(tiny_profile()) == "(no error)");
  auto doc = tiny_profile();
  doc["traceEvents"][2]["dur"] = -3;
  CHECK(import_error(doc) ==
        "profile.json: traceEvents[2].dur: -3 is negative; expected a duration >= 0");
  doc = tiny_profile();
  doc["traceEvents"][2].erase("ts");
  CHECK(import_error(doc) == "profile.json: traceEvents[2]: missing required field 'ts'");
  doc = tiny_profile();
  doc["traceEvents"][2]["args"]["flops"] = "many";
  CHECK(import_error(doc) == "profile.json: traceEvents[2].args.flops: \"many\" is not a number");
  doc = tiny_profile();
  doc["traceEvents"][2]["args"]["bytes_accessed"] = -1;
  CHECK_THAT(import_error(doc),
             Catch::StartsWith("profile.json: traceEvents[2].args.bytes_accessed: -1 is negative"));
  doc = tiny_profile();
  doc["traceEvents"][3]["args"]["long_name"] =
      "%all-reduce.2 = f32[16]{0} all-reduce(f32[16]{0} %f), replica_groups={{0,5}}";
  CHECK_THAT(
      import_error(doc),
      Catch::StartsWith(
          "profile.json: traceEvents[3] (all-reduce.2): replica groups do not fit the mesh"));
  doc = tiny_profile();
  doc["traceEvents"][0]["args"]["name"] = "/host:CPU";
  CHECK_THAT(import_error(doc), Catch::StartsWith("profile.json: no TPU device in the profile"));
  CHECK_THAT(import_error(nlohmann::json{{"events", 1}}),
             Catch::StartsWith("profile.json: is not a Chrome trace event file"));
  doc = tiny_profile();
  doc["traceEvents"][1]["args"]["name"] = "Steps";
  CHECK_THAT(
      import_error(doc),
      Catch::Contains("no complete (\"ph\": \"X\") events on a TPU thread named \"XLA Ops\""));
  doc = tiny_profile();
  doc["traceEvents"][4] = 7;
  CHECK(import_error(doc) ==
        "profile.json: traceEvents[4]: 7 is not an object; expected a trace event");
}

TEST_CASE("a bad --sizes document names the entry") {
  auto bad = [](const nlohmann::json& doc) {
    try {
      read_collective_overrides(doc, "sizes.json");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(bad({{"all-reduce.2", -8}}) ==
        "sizes.json: all-reduce.2: -8 is negative; expected a size >= 0");
  CHECK_THAT(bad({{"all-reduce.2", {{"bytes", 8}, {"size", 1}}}}),
             Catch::StartsWith("sizes.json: all-reduce.2: unknown field 'size'"));
  CHECK_THAT(bad({{"all-reduce.2", "8MiB"}}),
             Catch::StartsWith("sizes.json: all-reduce.2: \"8MiB\" is neither a size"));
  CHECK(bad({{"all-reduce.2", 8}, {"_comment", "x"}}) == "(no error)");
}
