// The memory screen of `tpusim plan` (tools/plan/evaluate.hpp, screened_resident_bytes): a
// decoder's resident bytes extrapolated from its 1- and 2-layer Programs equal the whole
// Program's, and every verdict is the same with the screen as without it.
#include <algorithm>
#include <catch2/catch.hpp>

#include "compiler/compiler.hpp"
#include "core/config.hpp"
#include "models/memory/memory_model.hpp"
#include "models/workload.hpp"
#include "tools/plan/evaluate.hpp"
#include "tools/plan/space.hpp"
#include "tools/study/study.hpp"

using namespace tpusim;

namespace {
/// A small decoder of 8 layers on a 2x2 TPU v4 slice (8 cores) with 0.1 GiB of HBM a core,
/// which the resident buffers of some layouts overflow.
Config memory_screen_study() {
  nlohmann::json w = {
      {"preset", "decoder_1b"}, {"layers", 8},   {"d_model", 512}, {"heads", 8},
      {"d_ff", 2048},           {"vocab", 4096}, {"seq_len", 128}, {"global_batch", 16}};
  return load_config({{"preset", "tpu_v4"},
                      {"topology", "2x2"},
                      {"hardware", {{"hbm", {{"GiB_per_core", 0.1}}}}},
                      {"workload", w}});
}

/// The whole Program's resident bytes per core, without CMEM (as the screen builds).
double whole_resident_without_cmem(const cli::Study& s) {
  HardwareSpec hw = s.hardware;
  hw.cmem_bytes_per_chip = 0;
  const Topology topology(s.topology);
  return analyze_memory(
             compile(build_program(s.config, topology, hw), hw, compiler_options(s.config)),
             hw.hbm_bytes_per_core)
      .resident_bytes;
}
}  // namespace

TEST_CASE("plan memory screen: the resident bytes of the whole Program, the same verdicts") {
  const Config cfg = memory_screen_study();
  plan::SearchSpace space = plan::default_space(cfg, 8);
  // Two values of the axes that shape the memory, one of the others (no pipeline: the screen
  // leaves it out).
  for (auto& a : space.axes) {
    const bool shapes = a.path == "parallelism.model" || a.path == "parallelism.fsdp" ||
                        a.path == "workload.remat" || a.path == "workload.microbatches";
    if (a.path == "parallelism.pipeline") a.values = {1};
    a.values.resize(std::min<std::size_t>(a.values.size(), shapes ? 2 : 1));
  }
  const auto all = plan::enumerate(space, cfg.json());
  std::size_t compared = 0, rejected_on_screen = 0, fit = 0;
  for (const auto& c : all) {
    const cli::CandidateCheck whole = cli::check_candidate(c.study, nullptr, false);
    const cli::CandidateCheck with_screen = cli::check_candidate(c.study);
    INFO(c.study["parallelism"].dump() + " " + c.study["workload"].dump());
    CHECK(with_screen.rejected_class == whole.rejected_class);
    rejected_on_screen += with_screen.screened ? 1 : 0;
    fit += whole.rejected_class.empty() ? 1 : 0;
    if (whole.peak_bytes == 0) continue;  // invalid
    const cli::Study s = cli::load_study(c.study, {}, "(test)");
    const auto resident = cli::screened_resident_bytes(s, Topology(s.topology));
    if (!resident) {  // only a pipeline's stages are not alike
      CHECK(c.study["parallelism"]["pipeline"] != 1);
      continue;
    }
    CHECK(*resident == Approx(whole_resident_without_cmem(s)).epsilon(1e-12));
    ++compared;
  }
  CHECK(compared > 10);
  CHECK(rejected_on_screen > 0);
  CHECK(fit > 0);
}
