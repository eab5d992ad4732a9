// tpusim plan STUDY.json: searches the layouts of a study for the fastest that fits
// (tools/plan/plan_run.hpp, docs/plan.md).
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/plan/plan_run.hpp"

namespace tpusim::cli {
namespace {

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
  cmd->callback([a] { set_exit_code(run_plan(*a)); });
}};

}  // namespace
}  // namespace tpusim::cli
