// A compiled Program in a file (traces/format/program_file.hpp): read back, it is the Program
// written, field by field; a file that is not one, is cut short, was written for another study or
// holds an inconsistent Program is one ConfigError naming the option, never a crash or a large
// allocation.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "compiler/compiler.hpp"
#include "core/errors.hpp"
#include "tests/traces/trace_test_programs.hpp"
#include "tests/unit/model_study.hpp"
#include "traces/format/program_file.hpp"

using namespace tpusim;
using tpusim::test::model_study;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spill(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// A Program compiled as `tpusim run` compiles it (fusion, tiled layouts, CMEM on TPU v4).
Program compiled(const Config& cfg) {
  const Topology topology(topology_from_json(cfg.json().at("topology")));
  const HardwareSpec hw = HardwareSpec::from_config(cfg);
  return compile(build_program(cfg, topology, hw), hw, compiler_options(cfg));
}

/// What check_same_program (the trace format's fields) leaves out: what the partitioner and the
/// compiler add to an op.
void check_same_compiled_op(const Op& a, const Op& b) {
  CHECK(a.compute.mxu_dtype == b.compute.mxu_dtype);
  CHECK(a.output.bytes == b.output.bytes);
  CHECK(a.output.dtype == b.output.dtype);
  CHECK(a.output.cls == b.output.cls);
  CHECK(a.output.last_use == b.output.last_use);
  REQUIRE(a.reads.size() == b.reads.size());
  for (std::size_t i = 0; i < a.reads.size(); ++i) {
    CHECK(a.reads[i].producer == b.reads[i].producer);
    CHECK(a.reads[i].bytes == b.reads[i].bytes);
  }
  CHECK(a.out_shape == b.out_shape);
  CHECK(a.feature_map == b.feature_map);
  CHECK(a.fusion_role == b.fusion_role);
  REQUIRE(a.more_outputs.size() == b.more_outputs.size());
  for (std::size_t i = 0; i < a.more_outputs.size(); ++i) {
    CHECK(a.more_outputs[i].bytes == b.more_outputs[i].bytes);
    CHECK(a.more_outputs[i].last_use == b.more_outputs[i].last_use);
  }
  CHECK(a.fused == b.fused);
  CHECK(a.padding_bytes == b.padding_bytes);
  CHECK(a.cmem_bytes == b.cmem_bytes);
}

}  // namespace

TEST_CASE("program file: read back, the Program is the one written") {
  const std::string path =
      (std::filesystem::temp_directory_path() / "tpusim_test.program").string();
  // A decoder on TPU v4 (fusion, CMEM, FSDP gathers), the same pipelined (its units), SSD with
  // spatial partitioning (halo permutes) and BERT with weight-update sharding.
  auto decoder = [](nlohmann::json parallelism) {
    return load_config({{"preset", "tpu_v4"},
                        {"topology", "2x2"},
                        {"parallelism", parallelism},
                        {"workload",
                         {{"preset", "decoder_1b"},
                          {"layers", 4},
                          {"d_model", 256},
                          {"heads", 4},
                          {"d_ff", 1024},
                          {"vocab", 1024},
                          {"seq_len", 64},
                          {"global_batch", 16}}}});
  };
  const std::vector<Config> studies = {
      decoder({{"fsdp", 2}, {"model", 2}}), decoder({{"pipeline", 2}}),
      model_study("ssd", "2x2", 4, {{"spatial", 2}}),
      model_study("bert_large", "2x2", 16, {{"weight_update_sharding", true}}, {{"layers", 2}})};
  for (const Config& cfg : studies) {
    INFO(cfg.json().dump());
    const Program p = compiled(cfg);
    write_program_file(path, p, "tag");
    const Program q = read_program_file(path, "tag", "--program");
    testing::check_same_program(q, p);
    for (std::size_t i = 0; i < p.ops.size(); ++i) check_same_compiled_op(q.ops[i], p.ops[i]);
    CHECK(q.infeed_bytes_per_example == p.infeed_bytes_per_example);
    REQUIRE(q.resident.size() == p.resident.size());
    for (std::size_t i = 0; i < p.resident.size(); ++i) {
      CHECK(q.resident[i].name == p.resident[i].name);
      CHECK(q.resident[i].cls == p.resident[i].cls);
      CHECK(q.resident[i].dtype == p.resident[i].dtype);
      CHECK(q.resident[i].bytes == p.resident[i].bytes);
    }
    CHECK(q.has_memory == p.has_memory);
    CHECK(q.model_flops == p.model_flops);
    CHECK(q.tokens_per_example == p.tokens_per_example);
    CHECK(q.pipeline.stages == p.pipeline.stages);
    CHECK(q.pipeline.microbatches == p.pipeline.microbatches);
    CHECK(q.pipeline.repeats == p.pipeline.repeats);
    CHECK(q.pipeline.schedule == p.pipeline.schedule);
    REQUIRE(q.pipeline.units.size() == p.pipeline.units.size());
    for (std::size_t i = 0; i < p.pipeline.units.size(); ++i) {
      CHECK(q.pipeline.units[i].first_op == p.pipeline.units[i].first_op);
      CHECK(q.pipeline.units[i].last_op == p.pipeline.units[i].last_op);
      CHECK(q.pipeline.units[i].forward == p.pipeline.units[i].forward);
      CHECK(q.pipeline.units[i].iteration == p.pipeline.units[i].iteration);
    }
  }
  CHECK(compiled(studies[1]).pipeline.units.size() > 0);
  std::filesystem::remove(path);
}

TEST_CASE("program file: not one, cut short, another study's or inconsistent is one error") {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string good = (dir / "tpusim_good.program").string();
  const std::string bad = (dir / "tpusim_bad.program").string();
  write_program_file(good, compiled(model_study("bert_large", "2x2", 16, {}, {{"layers", 1}})),
                     "tag");
  const std::string bytes = slurp(good);
  auto error_of = [&](const std::string& path, const std::string& tag) {
    try {
      read_program_file(path, tag, "--program");
    } catch (const ConfigError& e) {
      CHECK(e.problems().front().where == "--program");
      return e.problems().front().line();
    }
    return std::string("no error");
  };
  CHECK_THAT(error_of(good, "other"), Catch::Contains("written for another study"));
  // The tag names the executable's build: another build's file is refused too.
  CHECK(program_file_tag("abc") == program_file_tag("abc"));
  CHECK(program_file_tag("abc") != program_file_tag("abd"));
  CHECK(program_file_tag("abc").rfind("abc built by ", 0) == 0);
  CHECK_THAT(error_of((dir / "tpusim_missing.program").string(), "tag"),
             Catch::Contains("cannot be read"));
  spill(bad, "not a program at all");
  CHECK_THAT(error_of(bad, "tag"), Catch::Contains("not a Program file"));
  // Cut anywhere, it says so; never reads past the end.
  for (std::size_t cut : {std::size_t{9}, bytes.size() / 3, bytes.size() - 1}) {
    spill(bad, bytes.substr(0, cut));
    CHECK_THAT(error_of(bad, "tag"), Catch::Contains("cut short") ||
                                         Catch::Contains("a count larger than the file") ||
                                         Catch::Contains("not a Program file"));
  }
  spill(bad, bytes + "x");
  CHECK_THAT(error_of(bad, "tag"), Catch::Contains("bytes after the Program"));
  // A count of ops far beyond the file: refused before anything that large is allocated. The
  // ops' count follows the header (magic, tag, model, mesh, examples, infeed bytes).
  const Program p = read_program_file(good, "tag", "--program");
  std::size_t at = 8 + 17 + 8 + 3 + 8 + p.model.size() + 8;
  for (const auto& a : p.mesh) at += 8 + a.name.size() + 8;
  at += 16;
  std::string huge = bytes;
  const std::uint64_t many = 1ull << 60;
  huge.replace(at, 8, reinterpret_cast<const char*>(&many), 8);
  spill(bad, huge);
  CHECK_THAT(error_of(bad, "tag"), Catch::Contains("a count larger than the file"));
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}
