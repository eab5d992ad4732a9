// tpusim plan STUDY.json: searches the layouts of a study for the fastest that fits
// (tools/plan/plan_run.hpp, docs/plan.md).
#include <CLI/CLI.hpp>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tools/cli/cli.hpp"
#include "tools/cli/commands.hpp"
#include "tools/launch/fork_server.hpp"
#include "tools/plan/plan_run.hpp"

// jemalloc's control interface, when the executable is linked with it (CMakeLists.txt, option
// TPUSIM_JEMALLOC); null otherwise (the test binaries, the sanitizer build).
extern "C" int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp,
                       std::size_t newlen) __attribute__((weak));

namespace tpusim::cli {
namespace {

/// The plan's checks build and free thousands of Programs: pages that jemalloc returned to the
/// system came back zeroed, 2 MiB at a time, when the heap grew again (a sixth of the checks'
/// time; docs/benchmarks.md, "The allocator"). This process keeps them; its simulations, in
/// processes of their own, do not.
void keep_freed_pages() {
  if (mallctl == nullptr) return;
  unsigned arenas = 0;
  std::size_t size = sizeof arenas;
  if (mallctl("arenas.narenas", &arenas, &size, nullptr, 0) != 0) return;
  std::vector<std::string> names{"arenas.dirty_decay_ms", "arenas.muzzy_decay_ms"};  // new ones
  for (unsigned i = 0; i < arenas; ++i)  // those already made (an unused one refuses: ignored)
    for (const char* kind : {"dirty", "muzzy"})
      names.push_back("arena." + std::to_string(i) + "." + kind + "_decay_ms");
  for (const auto& name : names) {
    long never = -1;
    mallctl(name.c_str(), nullptr, nullptr, &never, sizeof never);
  }
}

const CommandRegistrar kPlanRegister{[](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plan", "Search the layouts of a study for the fastest that fits (see docs/plan.md)");
  auto a = std::make_shared<PlanArgs>();
  cmd->add_option("study", a->study_file, "study JSON: model, topology, hardware, global batch")
      ->required();
  cmd->add_option("--set", a->sets, "override path=value in the study (repeatable)");
  cmd->add_option("--space", a->space,
                  "candidate values of one axis: PATH=V1,V2,... (repeatable; one value fixes it)");
  cmd->add_option("--batch-per-chip", a->batch_per_chip,
                  "search global batches chips x LO, 2 LO, ... up to HI (LO:HI)");
  cmd->add_option("-j,--jobs", a->jobs, "simulations run at the same time")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--top", a->top, "layouts to list (and to keep out of the pruning)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--objective", a->objective,
                  "step_time, examples_per_s_per_chip, mfu or tokens_per_s_per_chip");
  cmd->add_option("--out", a->out_dir, "results store (default out/plan_<name of the study>)");
  cmd->add_option("--tie", a->tie_percent,
                  "flag layouts within this many percent of the winner as near ties (the "
                  "model's resolution; default 2)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_flag("--json", a->json, "print the plan as one JSON object");
  cmd->callback([a] {
    // First: the server is a copy of this process as it is now, small and with one thread.
    const auto server = launch::ForkServer::start(&cli::main);
    a->server = server.get();
    keep_freed_pages();
    set_exit_code(run_plan(*a));
  });
}};

}  // namespace
}  // namespace tpusim::cli
