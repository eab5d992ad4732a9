#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "core/errors.hpp"
#include "tests/traces/trace_test_programs.hpp"
#include "traces/format/file_bytes.hpp"
#include "traces/format/trace_format.hpp"

using namespace tpusim;
using tpusim::testing::check_same_program;
using tpusim::testing::every_field_program;
using tpusim::testing::file_bytes;

namespace {
std::string temp_path(const std::string& suffix) {
  return "/tmp/tpusim_trace_test_" + std::to_string(::getpid()) + suffix;
}
}  // namespace

TEST_CASE("a written trace reads back as the identical Program with every field") {
  const Program p = every_field_program();
  const std::string path = temp_path(".json");
  write_trace(p, path);
  const Program q = read_trace(path);
  check_same_program(p, q);
  CHECK_FALSE(trace::is_gzip(file_bytes(path)));
  std::remove(path.c_str());
}

TEST_CASE("a .gz trace is gzip-compressed and reads back identically with its metadata") {
  const Program p = every_field_program();
  const std::string path = temp_path(".json.gz");
  const nlohmann::json recorded_on = {
      {"topology", {{"name", "tpu_v3_2x2"}, {"dims", {2, 2}}, {"wrap", {false, false}}}},
      {"hardware", {{"preset", "tpu_v3"}}},
      {"source", "unit test"}};
  write_trace(p, path, recorded_on);
  const std::string bytes = file_bytes(path);
  REQUIRE(trace::is_gzip(bytes));
  const auto t = trace::read_trace_file(path);
  check_same_program(p, t.program);
  CHECK(t.recorded_on == recorded_on);
  // The compressed file holds the same document as the plain one.
  CHECK(trace::parse_json_text(trace::gunzip(bytes, path), path)["ops"].size() == p.ops.size());
  std::remove(path.c_str());
}

TEST_CASE("the reader detects gzip by its magic bytes whatever the file is called") {
  const Program p = every_field_program();
  const std::string gz = temp_path(".json.gz");
  const std::string renamed = temp_path(".renamed.json");
  write_trace(p, gz);
  std::rename(gz.c_str(), renamed.c_str());
  check_same_program(p, read_trace(renamed));
  std::remove(renamed.c_str());
}

TEST_CASE("the hand-written example trace reads and names its format and version") {
  const auto t =
      trace::read_trace_file(tpusim::testing::example_trace_dir() + "small_data_model.trace.json");
  const Program& p = t.program;
  CHECK(p.model == "example_mlp");
  REQUIRE(p.mesh.size() == 2);
  CHECK(p.mesh[0].size * p.mesh[1].size == 8);
  CHECK(p.ops.size() == 9);
  CHECK(p.num_collectives() == 5);
  CHECK(p.ops[1].compute.measured_ns == Approx(850.5));
  CHECK(p.ops[0].compute.matmul->flops() == p.ops[0].compute.flops);
  CHECK(p.ops[4].collective.shift == 1);
  CHECK(p.ops[4].collective.wrap);
  CHECK(t.recorded_on["topology"]["dims"] == nlohmann::json({2, 2}));
  CHECK_NOTHROW(p.validate());
}

TEST_CASE("a Program with both axes and replica groups on a collective is refused by the writer") {
  Program p = every_field_program();
  p.ops[2].collective.replica_groups = {{0, 1, 2, 3, 4, 5, 6, 7}};
  CHECK_THROWS_WITH(trace::program_to_json(p, nullptr),
                    Catch::Contains("ops[2]") && Catch::Contains("both"));
}
