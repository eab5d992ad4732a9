// Regression check, not a validation: every shipped study's partitioned and compiled Program (and
// a few variants that reach the layouts no shipped study uses) against the hashes of their
// canonical text recorded in tests/golden/programs.txt. A restructuring of the partitioner must
// leave every Program as it was; a change that means to move one rewrites the golden with
//   TPUSIM_UPDATE_PROGRAM_GOLDEN=1 build/bin/tpusim_unit_tests "shipped studies*"
// and says why in its commit. TPUSIM_PROGRAM_TEXT_DIR=DIR also writes every case's whole text (all
// 17 digits of each number) into DIR, to diff two builds.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "compiler/compiler.hpp"
#include "core/config.hpp"
#include "core/hardware.hpp"
#include "models/model_builder.hpp"
#include "models/workload.hpp"
#include "program_text.hpp"
#include "topologies/topology.hpp"

using namespace tpusim;

namespace {

constexpr int kDigits = 12;         // significant digits of the canonical numbers
constexpr std::size_t kBlock = 64;  // lines per block hash (to name the first differing op)

struct Case {
  std::string study;              // file in configs/studies
  std::vector<std::string> sets;  // --set overrides
  std::string name() const {
    std::string s = study;
    for (const auto& a : sets) s += " " + a;
    return s;
  }
};

// Layouts and options no shipped study has: 2D sharding, the sequence axis (gathers and
// all-to-all), FSDP and weight-update sharding with microbatches, rematerialisation, a W split,
// evaluation programs.
// clang-format off
const std::vector<Case> kVariants{
    {"decoder_1b_16", {"parallelism.fsdp=1", "parallelism.model2=2", "parallelism.shard_activations=true"}},
    {"decoder_1b_16", {"parallelism.fsdp=1", "parallelism.sequence=2"}},
    {"decoder_1b_16", {"parallelism.fsdp=1", "parallelism.sequence=2", "parallelism.sequence_attention=all_to_all"}},
    {"decoder_1b_16", {"parallelism.fsdp=4", "parallelism.sequence=2", "parallelism.shard_activations=true"}},
    {"decoder_1b_16", {"parallelism.fsdp=1", "parallelism.weight_update_sharding=true", "workload.microbatches=2"}},
    {"decoder_1b_16", {"workload.microbatches=2"}},
    {"bert_large_16", {"workload.global_batch=64", "workload.rematerialize=true", "workload.microbatches=2"}},
    {"transformer_big_256", {"parallelism.model=8", "workload.vocab=33792", "parallelism.weight_update_sharding=true"}},
    {"maskrcnn_spatial_4", {"parallelism.spatial_w=2"}},
    {"ssd_spatial_4", {"parallelism.weight_update_sharding=true"}},
    {"maskrcnn_64", {"workload.program=eval"}},
    {"ssd_256", {"workload.program=eval"}},
    {"resnet50_64", {"workload.program=eval"}},
};
// clang-format on

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  std::vector<std::string> studies;
  for (const auto& e : std::filesystem::directory_iterator(config_dir() + "/studies"))
    if (e.path().extension() == ".json") studies.push_back(e.path().stem().string());
  std::sort(studies.begin(), studies.end());
  for (const auto& s : studies) cases.push_back({s, {}});
  cases.insert(cases.end(), kVariants.begin(), kVariants.end());
  return cases;
}

std::string hex(std::uint64_t h, int digits) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(h));
  return std::string(buf).substr(0, digits);
}

struct Texts {
  std::vector<std::string> partitioned, compiled;
};

Texts texts_of(const Case& c, int digits = kDigits) {
  const Config cfg = load_config_file(config_dir() + "/studies/" + c.study + ".json", c.sets);
  Topology topo(topology_from_json(cfg.json().at("topology")));
  const HardwareSpec hw = HardwareSpec::from_config(cfg);
  const Program p = build_program(cfg, topo, hw);
  const tpusim::test::ProgramText text(digits);
  return {text.lines(p), text.lines(compile(p, hw, compiler_options(cfg)))};
}

// "p LINES HASH ; c LINES HASH ; b BLOCK..." of a case.
std::string record_of(const Texts& t) {
  using tpusim::test::fnv1a;
  std::string r = "p " + std::to_string(t.partitioned.size()) + " " +
                  hex(fnv1a(t.partitioned), 16) + " ; c " + std::to_string(t.compiled.size()) +
                  " " + hex(fnv1a(t.compiled), 16) + " ; b";
  for (std::size_t i = 0; i < t.partitioned.size(); i += kBlock)
    r += " " + hex(fnv1a(t.partitioned, i, i + kBlock), 8);
  return r;
}

// The whole texts, every number in full, for a diff: DIR/NAME.partitioned.txt, .compiled.txt.
void write_text(const std::string& dir, const Case& c, const Texts& t) {
  std::string name = c.name();
  std::replace(name.begin(), name.end(), ' ', '+');
  for (const auto& [kind, lines] :
       {std::pair{".partitioned.txt", &t.partitioned}, std::pair{".compiled.txt", &t.compiled}}) {
    std::ofstream out(dir + "/" + name + kind);
    for (const auto& line : *lines) out << line << "\n";
  }
}

std::string golden_path() { return config_dir() + "/../tests/golden/programs.txt"; }

std::map<std::string, std::string> read_golden() {
  std::map<std::string, std::string> out;
  std::ifstream in(golden_path());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto bar = line.find(" | ");
    if (bar != std::string::npos) out[line.substr(0, bar)] = line.substr(bar + 3);
  }
  return out;
}

// The first line of the partitioned text in the first block whose hash differs, for the message.
std::string first_difference(const Texts& t, const std::string& want) {
  using tpusim::test::fnv1a;
  const auto at = want.find(" ; b ");
  std::istringstream blocks(at == std::string::npos ? "" : want.substr(at + 5));
  std::string h;
  for (std::size_t i = 0; i < t.partitioned.size(); i += kBlock) {
    if (!(blocks >> h))
      return "the golden has fewer blocks; line " + std::to_string(i) + ": " + t.partitioned[i];
    if (h != hex(fnv1a(t.partitioned, i, i + kBlock), 8))
      return "partitioned lines " + std::to_string(i) + ".." +
             std::to_string(std::min(i + kBlock, t.partitioned.size()) - 1) +
             " differ (line 0 is the Program, then resident buffers, then ops); the first of "
             "them now: " +
             t.partitioned[i];
  }
  return "the partitioned text matches block by block: the compiled Program differs";
}

}  // namespace

TEST_CASE("shipped studies build the same Programs as the regression golden") {
  const bool update = std::getenv("TPUSIM_UPDATE_PROGRAM_GOLDEN") != nullptr;
  const char* text_dir = std::getenv("TPUSIM_PROGRAM_TEXT_DIR");
  const auto golden = read_golden();
  std::ostringstream fresh;
  int checked = 0;
  for (const Case& c : all_cases()) {
    INFO(c.name());
    const Texts t = texts_of(c);
    const std::string got = record_of(t);
    fresh << c.name() << " | " << got << "\n";
    if (update) continue;
    if (text_dir) write_text(text_dir, c, texts_of(c, 17));
    const auto it = golden.find(c.name());
    if (it == golden.end()) FAIL("not in " << golden_path() << ": rewrite it (see the test)");
    INFO((it->second == got ? "" : first_difference(t, it->second)));
    CHECK(got == it->second);
    ++checked;
  }
  if (update) {
    std::ofstream out(golden_path());
    out << "# REGRESSION GOLDEN, NOT A VALIDATION. Per case (a shipped study of configs/studies,\n"
           "# or one with --set overrides): the line count and FNV-1a hash of the canonical text\n"
           "# (tests/regression/program_text.hpp, 12 significant digits) of its partitioned "
           "Program\n"
           "# (p) and of the compiled Program (c), then hashes of the partitioned text's blocks\n"
           "# of 64 lines (b). Written by tests/regression/test_program_golden.cpp with\n"
           "# TPUSIM_UPDATE_PROGRAM_GOLDEN=1; it guards against unintended change only.\n"
        << fresh.str();
    WARN("rewrote " << golden_path());
  } else {
    CHECK(checked == static_cast<int>(all_cases().size()));
  }
}
