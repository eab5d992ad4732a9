// The memory screen of `tpusim plan` (tools/plan/evaluate.hpp, screened_memory): a decoder's
// resident bytes and the most bytes live in its forward pass, extrapolated from its 2- and 3-layer
// Programs, equal the whole Program's, are below its peak, and every verdict is the same with
// the screen as without it (a layout rejected on its resident bytes alone with the same figure
// from the Programs partitioned but not compiled); a deferred check's step bound from the same
// Programs is below the whole Program's.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>

#include "compiler/cmem_placement.hpp"
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

/// The whole Program's figures per core without CMEM (as the screen builds): resident bytes,
/// the most bytes live during the forward pass, the peak.
struct WholeMemory {
  double resident = 0, forward = 0, peak = 0;
};
WholeMemory whole_without_cmem(const cli::Study& s) {
  HardwareSpec hw = s.hardware;
  hw.cmem_bytes_per_chip = 0;
  const Topology topology(s.topology);
  const Program p = compile(build_program(s.config, topology, hw), hw, compiler_options(s.config));
  const MemoryProfile m = analyze_memory(p, hw.hbm_bytes_per_core);
  WholeMemory w{m.resident_bytes, m.resident_bytes, m.peak_bytes};
  const std::vector<double> live = live_bytes_per_op(p);
  for (std::size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].phase == Phase::Forward) w.forward = std::max(w.forward, live[i]);
  return w;
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
  std::size_t compared = 0, rejected_on_screen = 0, fit = 0, on_resident = 0;
  for (const auto& c : all) {
    const cli::CandidateCheck whole = cli::check_candidate(c.study, nullptr, cli::Build::Whole);
    const cli::CandidateCheck with_screen = cli::check_candidate(c.study);
    INFO(c.study["parallelism"].dump() + " " + c.study["workload"].dump());
    CHECK(with_screen.rejected_class == whole.rejected_class);
    rejected_on_screen += with_screen.screened ? 1 : 0;
    fit += whole.rejected_class.empty() ? 1 : 0;
    if (whole.peak_bytes == 0) continue;  // invalid
    const cli::Study s = cli::load_study(c.study, {}, "(test)");
    const auto screened = cli::screened_memory(s, Topology(s.topology));
    if (!screened) {  // only a pipeline's stages are not alike
      CHECK(c.study["parallelism"]["pipeline"] != 1);
      continue;
    }
    const WholeMemory w = whole_without_cmem(s);
    CHECK(screened->resident_bytes == Approx(w.resident).epsilon(1e-12));
    CHECK(screened->forward_peak_bytes == Approx(w.forward).epsilon(1e-12));
    CHECK(screened->forward_peak_bytes <= w.peak * (1 + 1e-12));
    // Rejected on the resident bytes alone: check_candidate took them from the shallow Programs
    // partitioned, not compiled (screened_memory's resident_first), and they are the same.
    if (with_screen.screened &&
        with_screen.reason.find("resident buffers alone") != std::string::npos) {
      CHECK(with_screen.peak_bytes == Approx(screened->resident_bytes).epsilon(1e-12));
      ++on_resident;
    }
    ++compared;
  }
  CHECK(compared > 10);
  CHECK(on_resident > 0);
  CHECK(rejected_on_screen > 0);
  CHECK(fit > 0);
}

TEST_CASE("plan memory screen: the forward pass rejects where the resident bytes fit") {
  // The first layout, with the HBM set between its screened resident bytes and forward pass
  // (less a core's CMEM, which may hold that much of them): the screen rejects it on the forward
  // pass, and the whole Program does not fit either.
  const Config cfg = memory_screen_study();
  const auto all = plan::enumerate(plan::default_space(cfg, 8), cfg.json());
  nlohmann::json study = all.front().study;
  const cli::Study s = cli::load_study(study, {}, "(test)");
  const auto m = cli::screened_memory(s, Topology(s.topology));
  REQUIRE(m);
  REQUIRE(m->forward_peak_bytes > m->resident_bytes);
  const double cmem = s.hardware.cmem_bytes_per_core();
  const double hbm = (m->resident_bytes + m->forward_peak_bytes) / 2 - cmem;
  // hardware.hbm.GiB_per_core is a TensorCore's; a megacore device has its chip's.
  auto& gib = study["hardware"]["hbm"]["GiB_per_core"];
  gib = gib.get<double>() * hbm / s.hardware.hbm_bytes_per_core;
  const cli::CandidateCheck screened = cli::check_candidate(study);
  CHECK(screened.screened);
  CHECK(screened.reason.rfind("the forward pass", 0) == 0);
  CHECK(screened.peak_bytes == Approx(m->forward_peak_bytes).epsilon(1e-12));
  CHECK(cli::check_candidate(study, nullptr, cli::Build::Whole).rejected_class ==
        "does not fit in HBM");
}

TEST_CASE("plan deferred checks: the screen's bound is below the whole Program's, its sums equal") {
  // A layout that passes the screen is not built whole (CandidateCheck::deferred); its bound
  // comes from the 2-, 3- and 4-layer Programs with every buffer that fits alone counted in CMEM
  // (place_in_cmem_optimistic). The compute term (a sum over the ops) equals the whole Program's
  // under that CMEM; the bisection and ingress terms (each the largest of such sums) and the
  // critical path are no larger than its; so the bound is below the one of the whole Program
  // with CMEM as placed, and the peak figure below its peak.
  const Config cfg = memory_screen_study();
  plan::SearchSpace space = plan::default_space(cfg, 8);
  for (auto& a : space.axes) {
    const bool shapes = a.path == "parallelism.model" || a.path == "parallelism.fsdp" ||
                        a.path == "workload.remat" || a.path == "workload.microbatches" ||
                        a.path == "workload.attention";
    if (a.path == "parallelism.pipeline") a.values = {1};
    a.values.resize(std::min<std::size_t>(a.values.size(), shapes ? 2 : 1));
  }
  nlohmann::json base = cfg.json();
  base["hardware"]["hbm"]["GiB_per_core"] = 16;  // every layout fits: all are compared
  std::size_t deferred = 0;
  for (const auto& c : plan::enumerate(space, base)) {
    INFO(c.study["parallelism"].dump() + " " + c.study["workload"].dump());
    const cli::CandidateCheck whole = cli::check_candidate(c.study, nullptr, cli::Build::Whole);
    const cli::CandidateCheck d = cli::check_candidate(c.study, nullptr, cli::Build::Deferred);
    CHECK(d.rejected_class == whole.rejected_class);
    if (!d.deferred) continue;
    ++deferred;
    REQUIRE(whole.rejected_class.empty());
    CHECK(d.program_fingerprint.empty());
    const cli::Study s = cli::load_study(c.study, {}, "(test)");
    const Topology topology(s.topology);
    HardwareSpec hw = s.hardware;
    hw.cmem_bytes_per_chip = 0;
    Program p = compile(build_program(s.config, topology, hw), hw, compiler_options(s.config));
    place_in_cmem_optimistic(p, s.hardware.cmem_bytes_per_core());
    const plan::StepBound optimistic = plan::step_lower_bound(p, topology, s.hardware);
    CHECK(d.bound.compute_ms == Approx(optimistic.compute_ms).epsilon(1e-9));
    CHECK(d.bound.bisection_ms <= optimistic.bisection_ms * (1 + 1e-9));
    CHECK(d.bound.ingress_ms <= optimistic.ingress_ms * (1 + 1e-9));
    CHECK(d.bound.critical_ms <= optimistic.critical_ms * (1 + 1e-9));
    CHECK(optimistic.step_ms() <= whole.bound.step_ms() * (1 + 1e-9));
    CHECK(d.bound.step_ms() <= whole.bound.step_ms() * (1 + 1e-9));
    CHECK(d.peak_bytes <= whole.peak_bytes);
    CHECK(d.model_flops == Approx(whole.model_flops).epsilon(1e-9));
    CHECK(d.tokens_per_step == whole.tokens_per_step);
    CHECK(d.examples_per_step == whole.examples_per_step);
  }
  CHECK(deferred > 10);
}

TEST_CASE("plan deferred checks: a critical path whose growth bumps at shallow depths") {
  // The 1 B decoder of configs/studies/decoder_1b_16.json at model 8 with megacore on its 4x4x1
  // v4 slice: its critical path grows by 14.5 ms from 2 to 3 layers, 15.4 from 3 to 4, then 15.0
  // to 15.1 a layer. The screen takes the smaller of the first two growths from depth 4 on, so
  // its bound stays below the whole Program's (the line through 3 and 4 was 0.6 % above).
  std::ifstream f(config_dir() + "/studies/decoder_1b_16.json");
  nlohmann::json study = nlohmann::json::parse(f);
  study["parallelism"]["model"] = 8;
  study["parallelism"]["fsdp"] = 1;
  study["hardware"]["megacore"] = true;
  study["workload"]["remat"] = "save_dot_except_mlp";
  study["workload"]["attention"] = "flash";
  const cli::CandidateCheck whole = cli::check_candidate(study, nullptr, cli::Build::Whole);
  const cli::CandidateCheck d = cli::check_candidate(study, nullptr, cli::Build::Deferred);
  REQUIRE(whole.rejected_class.empty());
  REQUIRE(d.deferred);
  CHECK(d.bound.critical_ms <= whole.bound.critical_ms);
  CHECK(d.bound.step_ms() <= whole.bound.step_ms());
  CHECK(d.bound.step_ms() > 0.95 * whole.bound.step_ms());  // still a close bound
}
