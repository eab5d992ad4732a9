// tpusim plot: a sweep's results.csv as charts (SVG and PNG) and the numbers behind them.
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/plot/plot_run.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kPlotRegister{[](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plot",
      "Draw a sweep's results.csv: metrics against a swept axis, time breakdown (SVG, PNG)");
  auto csv = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto req = std::make_shared<PlotRequest>();
  cmd->add_option("results", *csv, "results.csv written by tpusim sweep or merge")->required();
  cmd->add_option("--out", *out, "directory for the charts")->required();
  cmd->add_option("--title", req->title,
                  "names the study in chart titles (default: the sweep file's name)");
  cmd->add_option("--x", req->x,
                  "column for the x axis (default: chips if it varies within a series, else the "
                  "first swept column that varies)");
  cmd->add_option("--y", req->y,
                  "a numeric column to draw, one chart each (repeat for several; default: step "
                  "time, throughput per chip, scaling efficiency, communication share, every "
                  "other numeric result column, and the time breakdown)");
  auto* zero = cmd->add_flag("--y-from-zero", req->y_from_zero,
                             "start every y axis at 0 (times, shares and efficiencies always "
                             "do; the others are fitted, with a break mark at the axis' foot)");
  cmd->add_flag("--y-fitted", req->y_fitted,
                "fit every y axis to its data, times and shares too (drawn with a break mark)")
      ->excludes(zero);
  cmd->add_option("--dpi", req->dpi,
                  "resolution of the PNG charts in pixels per inch (default 300; 96 draws one "
                  "pixel per SVG unit)")
      ->check(CLI::Range(24.0, 1200.0));
  cmd->callback([=] { run_plot(*csv, *out, *req); });
}};

}  // namespace
}  // namespace tpusim::cli
