// Every class of bad trace input is a ConfigError that names the file and the place in it.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "tests/traces/trace_test_programs.hpp"
#include "traces/format/file_bytes.hpp"
#include "traces/format/trace_format.hpp"

using namespace tpusim;

namespace {
nlohmann::json valid_doc() {
  return nlohmann::json::parse(
      trace::program_to_json(tpusim::testing::every_field_program(), nullptr).dump());
}
std::string error_of(const nlohmann::json& doc) {
  try {
    trace::trace_from_json(doc, "trace.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}
std::string error_of_bytes(const std::string& bytes) {
  try {
    trace::parse_trace(bytes, "trace.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("the valid document reads: the bad-input cases below differ from it in one place") {
  CHECK(error_of(valid_doc()) == "(no error)");
}

TEST_CASE("a negative collective size names the op and field") {
  auto doc = valid_doc();
  doc["ops"][3]["collective"]["bytes"] = -4;
  CHECK(error_of(doc) ==
        "trace.json: ops[3].collective.bytes: -4 is negative; expected a size >= 0");
}

TEST_CASE("a negative measured duration names the op and field") {
  auto doc = valid_doc();
  doc["ops"][1]["compute"]["measured_ns"] = -5.5;
  CHECK(error_of(doc) ==
        "trace.json: ops[1].compute.measured_ns: -5.5 is negative; expected a duration >= 0");
}

TEST_CASE("truncated JSON is reported with line and column") {
  const std::string text = valid_doc().dump(1);
  CHECK_THAT(error_of_bytes(text.substr(0, text.size() / 2)),
             Catch::StartsWith("trace.json:") && Catch::Contains("malformed JSON"));
}

TEST_CASE("truncated and corrupt gzip data are reported") {
  const std::string gz = trace::gzip(valid_doc().dump());
  CHECK_THAT(error_of_bytes(gz.substr(0, gz.size() / 2)),
             Catch::Contains("trace.json: truncated gzip data"));
  std::string corrupt = gz;
  corrupt[12] = static_cast<char>(corrupt[12] ^ 0x55);
  corrupt[13] = static_cast<char>(corrupt[13] ^ 0x55);
  CHECK_THAT(error_of_bytes(corrupt), Catch::StartsWith("trace.json"));
}

TEST_CASE("an unknown format version is refused naming the version field") {
  auto doc = valid_doc();
  doc["version"] = 2;
  CHECK(error_of(doc) == "trace.json: version: 2 is not a version this tpusim reads; expected 1");
  doc["version"] = 1;
  doc["format"] = "chrome-trace";
  CHECK_THAT(error_of(doc),
             Catch::StartsWith("trace.json: format: 'chrome-trace' is not this format"));
}

TEST_CASE("forward dependencies and self dependencies and cycles are refused at the dependency") {
  auto doc = valid_doc();
  doc["ops"][1]["deps"] = {3};
  CHECK_THAT(error_of(doc),
             Catch::StartsWith("trace.json: ops[1].deps[0]: 3 is not an earlier op"));
  doc = valid_doc();
  doc["ops"][2]["deps"] = {2};
  CHECK_THAT(error_of(doc),
             Catch::StartsWith("trace.json: ops[2].deps[0]: 2 is not an earlier op"));
  doc = valid_doc();  // a cycle 0 -> 1 -> 0 always contains a forward edge, found at ops[0]
  doc["ops"][0]["deps"] = {1};
  CHECK_THAT(error_of(doc),
             Catch::StartsWith("trace.json: ops[0].deps[0]: 1 is not an earlier op") &&
                 Catch::Contains("cycles"));
  doc = valid_doc();
  doc["ops"][2]["deps"] = {-1};
  CHECK_THAT(error_of(doc),
             Catch::StartsWith("trace.json: ops[2].deps[0]: -1 is not an earlier op"));
}

TEST_CASE("unknown op and collective kinds are refused naming the kind") {
  auto doc = valid_doc();
  doc["ops"][2]["collective"]["kind"] = "all-sum";
  CHECK_THAT(
      error_of(doc),
      Catch::StartsWith("trace.json: ops[2].collective.kind: 'all-sum' is not a collective kind"));
  doc = valid_doc();
  doc["ops"][0]["kind"] = "all-reduce";  // a compute op claiming a collective kind
  CHECK_THAT(error_of(doc),
             Catch::StartsWith("trace.json: ops[0].kind: 'all-reduce' is a collective kind"));
  doc = valid_doc();
  doc["ops"][0].erase("compute");
  CHECK_THAT(error_of(doc),
             Catch::StartsWith("trace.json: ops[0]: missing required field 'compute'"));
  doc = valid_doc();
  doc["ops"][0]["phase"] = "warmup";
  CHECK_THAT(error_of(doc), Catch::StartsWith("trace.json: ops[0].phase: 'warmup' is not a phase"));
  doc = valid_doc();
  doc["ops"][0]["dtype"] = "fp4";  // int8 and fp8 are dtypes since quantized training
  CHECK_THAT(error_of(doc), Catch::StartsWith("trace.json: ops[0].dtype: 'fp4' is not a dtype"));
  doc = valid_doc();
  doc["ops"][0]["compute"]["mxu_dtype"] = "int4";
  CHECK_THAT(error_of(doc),
             Catch::StartsWith("trace.json: ops[0].compute.mxu_dtype: 'int4' is not a dtype"));
}

TEST_CASE("missing fields and wrong types and unknown fields name the place") {
  auto doc = valid_doc();
  doc["ops"][0].erase("name");
  CHECK(error_of(doc) == "trace.json: ops[0]: missing required field 'name'");
  doc = valid_doc();
  doc.erase("mesh");
  CHECK(error_of(doc) == "trace.json: missing required field 'mesh'");
  doc = valid_doc();
  doc["ops"][2]["collective"]["bytes"] = "4MiB";
  CHECK(error_of(doc) ==
        "trace.json: ops[2].collective.bytes: \"4MiB\" is string; expected a number");
  doc = valid_doc();
  doc["ops"][0]["compute"]["flop"] = 1;
  CHECK_THAT(error_of(doc), Catch::StartsWith("trace.json: ops[0].compute: unknown field 'flop'"));
  doc = valid_doc();
  doc["ops"][0]["compute"]["_note"] = "comments are allowed";
  CHECK(error_of(doc) == "(no error)");
  CHECK_THAT(error_of(nlohmann::json::array()),
             Catch::StartsWith("trace.json: is not a tpusim trace"));
}

TEST_CASE("collectives must name mesh axes that exist and groups that partition the mesh") {
  auto doc = valid_doc();
  doc["ops"][2]["collective"]["axes"] = {"pipeline"};
  CHECK(error_of(doc) ==
        "trace.json: ops[2].collective.axes[0]: 'pipeline' is not an axis of the trace's mesh");
  doc = valid_doc();
  doc["ops"][5]["collective"]["replica_groups"] = {{0, 1}, {1, 2}, {3, 4}, {5, 6}};
  CHECK_THAT(
      error_of(doc),
      Catch::StartsWith(
          "trace.json: ops[5].collective.replica_groups: device 1 is in more than one place"));
  doc = valid_doc();
  doc["ops"][5]["collective"]["replica_groups"] = {{0, 1}, {2, 3}};
  CHECK_THAT(
      error_of(doc),
      Catch::StartsWith(
          "trace.json: ops[5].collective.replica_groups: cover 4 devices but the mesh has 8"));
  doc = valid_doc();
  doc["ops"][5]["collective"]["replica_groups"] = {{0, 1}, {2, 3}, {4, 5}, {6, 8}};
  CHECK_THAT(
      error_of(doc),
      Catch::StartsWith("trace.json: ops[5].collective.replica_groups[3][1]: 8 is out of range"));
  doc = valid_doc();
  doc["ops"][6]["collective"].erase("shift");
  CHECK(error_of(doc) ==
        "trace.json: ops[6].collective: missing required field 'shift' (collective-permute)");
  doc = valid_doc();
  doc["ops"][2]["collective"]["shift"] = 1;
  CHECK(error_of(doc) ==
        "trace.json: ops[2].collective: 'shift' and 'wrap' apply only to collective-permute");
}

TEST_CASE("a bad mesh is refused naming the axis") {
  auto doc = valid_doc();
  doc["mesh"] = nlohmann::json::array();
  CHECK_THAT(error_of(doc), Catch::StartsWith("trace.json: mesh: is empty"));
  doc = valid_doc();
  doc["mesh"][1]["name"] = "data";
  CHECK(error_of(doc) == "trace.json: mesh[1].name: axis 'data' appears twice");
  doc = valid_doc();
  doc["mesh"][0]["size"] = 0;
  CHECK(error_of(doc) ==
        "trace.json: mesh[0].size: 0 is out of range; expected an integer in [1, 16777216]");
  doc = valid_doc();
  doc["mesh"][0]["size"] = 1 << 24;
  CHECK_THAT(error_of(doc),
             Catch::StartsWith("trace.json: mesh[1].size: makes the mesh larger than"));
}

TEST_CASE("a recorded topology must be a valid topology object") {
  auto doc = valid_doc();
  doc["recorded_on"] = {{"topology", {{"name", 5}, {"dims", {2, 2}}}}};
  CHECK_THAT(error_of(doc), Catch::StartsWith("trace.json: recorded_on.topology.name:"));
  doc["recorded_on"] = {{"topology", {{"dims", {2, 0}}}}};
  CHECK_THAT(error_of(doc), Catch::StartsWith("trace.json: recorded_on.topology.dims:"));
}

TEST_CASE("deeply nested JSON is refused instead of exhausting the stack") {
  std::string deep(100000, '[');
  CHECK_THAT(error_of_bytes(deep), Catch::Contains("nested deeper than"));
}

TEST_CASE("a number too large for a double is malformed JSON at its position, not a crash") {
  // Found by fuzz_trace_reader: nlohmann::json reports it as out_of_range, not parse_error.
  CHECK_THAT(error_of_bytes("{\"format\": 32e768}"),
             Catch::StartsWith("trace.json:1:") && Catch::Contains("malformed JSON") &&
                 Catch::Contains("number overflow") && !Catch::Contains("json.exception"));
}

TEST_CASE("duplicate keys in a trace are an error naming the path") {
  CHECK_THAT(error_of_bytes(R"({"format": "tpusim-trace", "mesh": [{"name": "a", "name": "b"}]})"),
             Catch::StartsWith("trace.json: mesh[0].name: duplicate key"));
}
