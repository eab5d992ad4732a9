// tpusim diff A B: two reports (JSON) or two results.csv files side by side.
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/compare/compare_runs.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kDiffRegister{[](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "diff", "Compare two reports (tpusim run --json) or two results.csv files side by side");
  auto a = std::make_shared<DiffArgs>();
  cmd->add_option("A", a->a, "first report (.json) or results table (.csv)")->required();
  cmd->add_option("B", a->b, "second one, of the same kind")->required();
  auto* tolerance =
      cmd->add_option("--tolerance", a->tolerance,
                      "exit code 1 if a number differs by more than this relative to A (e.g. 1% or "
                      "0.01), or a field or point is only in one run");
  cmd->add_flag("--json", a->json, "print the comparison as one JSON object");
  cmd->callback([a, tolerance] {
    a->tolerance_given = tolerance->count() > 0;  // --tolerance "" is refused, not no check
    set_exit_code(run_diff(*a));
  });
}};

}  // namespace
}  // namespace tpusim::cli
