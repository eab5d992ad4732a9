#pragma once
// Helpers for the sweep CLI tests: a scratch directory, sweep files written into it, reading
// results.csv and point files back.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/run_tpusim.hpp"
#include "tools/sweep/csv_table.hpp"

struct SweepScratch {
  std::string dir;
  SweepScratch() {
    char tmpl[] = "/tmp/tpusim_sweep_test_XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~SweepScratch() { std::filesystem::remove_all(dir); }
  SweepScratch(const SweepScratch&) = delete;
  SweepScratch& operator=(const SweepScratch&) = delete;

  std::string write(const std::string& name, const nlohmann::json& doc) const {
    std::string path = dir + "/" + name;
    std::ofstream(path) << doc.dump(1);
    return path;
  }
  std::string path(const std::string& name) const { return dir + "/" + name; }
};

/// A small study that simulates in well under a second: BERT-Large on a 2x2 slice (8 cores); the
/// batch of 16 also divides over the 16 cores of a 4x2 slice.
inline nlohmann::json small_bert_study() {
  return {{"preset", "tpu_v3"},
          {"topology", "2x2"},
          {"workload", {{"model", "bert_large"}, {"global_batch", 16}}}};
}

inline nlohmann::json point_report(const std::string& out_dir, const std::string& id) {
  return nlohmann::json::parse(slurp(out_dir + "/points/" + id + ".json")).at("report");
}

inline tpusim::sweep::CsvTable results_of(const std::string& out_dir) {
  return tpusim::sweep::read_csv(out_dir + "/results.csv");
}

/// Runs a shipped sweep file (`tpusim sweep FILE -j 2 --out SCRATCH/out`), requires it to exit 0
/// and returns its results.csv; the points are under s.path("out/points").
inline tpusim::sweep::CsvTable run_shipped_sweep(const SweepScratch& s, const std::string& file) {
  const TpusimResult r = run_tpusim({"sweep", file, "-j", "2", "--out", s.path("out")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return results_of(s.path("out"));
}

/// The chart of `plot`'s manifest (charts.json) written to `file`, or null.
inline nlohmann::json chart_named(const nlohmann::json& manifest, const std::string& file) {
  for (const auto& c : manifest["charts"])
    if (c["file"] == file) return c;
  return nlohmann::json();
}
