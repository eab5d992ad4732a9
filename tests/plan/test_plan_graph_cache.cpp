// The op-graph cache `tpusim plan` checks its layouts with (models/workload.hpp, OpGraphCache):
// a layout checked with graphs from the cache gets the same verdict, memory peak, bounds and
// Program as one checked from scratch, and layouts that differ only where the builder does not
// read share a graph.
#include <catch2/catch.hpp>

#include "core/config.hpp"
#include "models/workload.hpp"
#include "tools/plan/evaluate.hpp"
#include "tools/plan/space.hpp"

using namespace tpusim;

namespace {
/// A small decoder on a 2x2 TPU v4 slice (8 cores): the default language-model space.
Config graph_cache_study() {
  nlohmann::json w = {
      {"preset", "decoder_1b"}, {"layers", 2},   {"d_model", 512}, {"heads", 8},
      {"d_ff", 1024},           {"vocab", 4096}, {"seq_len", 128}, {"global_batch", 16}};
  return load_config({{"preset", "tpu_v4"}, {"topology", "2x2"}, {"workload", w}});
}
}  // namespace

TEST_CASE("plan graph cache: every verdict equals the one built from scratch") {
  const Config cfg = graph_cache_study();
  plan::SearchSpace space = plan::default_space(cfg, 8);
  // Three values of each axis at most (fsdp, microbatches, remat, ... still vary, and the
  // space still holds valid layouts and refused ones): each layout is checked three times.
  for (auto& a : space.axes)
    if (a.values.size() > 3) a.values.resize(3);
  const auto all = plan::enumerate(space, cfg.json());
  REQUIRE(all.size() > 50);
  OpGraphCache graphs(4), all_graphs(100000);  // one that drops graphs, one that keeps them
  std::size_t valid = 0, invalid = 0;
  for (const auto& c : all) {
    const cli::CandidateCheck fresh = cli::check_candidate(c.study);
    const cli::CandidateCheck cached = cli::check_candidate(c.study, &graphs);
    INFO(c.study["parallelism"].dump() + " " + c.study["workload"].dump());
    CHECK(cached.rejected_class == fresh.rejected_class);
    CHECK(cached.reason == fresh.reason);
    CHECK(cached.peak_bytes == fresh.peak_bytes);
    CHECK(cached.program_fingerprint == fresh.program_fingerprint);
    CHECK(cached.bound.step_ms() == fresh.bound.step_ms());
    CHECK(cli::check_candidate(c.study, &all_graphs).program_fingerprint ==
          fresh.program_fingerprint);
    (fresh.rejected_class.empty() ? valid : invalid) += 1;
  }
  CHECK(valid > 0);
  CHECK(invalid > 0);
  // Layouts that differ in fsdp, microbatches or megacore only need graphs of a few batches.
  CHECK(all_graphs.hits() > all_graphs.misses());
}

TEST_CASE("plan graph cache: the builder's reads key the graph") {
  const Config cfg = graph_cache_study();
  const auto reads = graph_read_paths(cfg);
  auto read = [&](const std::string& p) {
    return std::find(reads.begin(), reads.end(), p) != reads.end();
  };
  // What shapes the graph is read; what only divides the batch (fsdp) is not.
  CHECK(read("workload.d_model"));
  CHECK(read("workload.remat"));
  CHECK(read("parallelism.model"));
  CHECK_FALSE(read("parallelism.fsdp"));
}
