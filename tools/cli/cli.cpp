#include "tools/cli/cli.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "core/printable.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/suggest.hpp"

namespace tpusim::cli {

namespace {
/// What CLI11 printed for --help or --version (exit code `code`), checked like any output: a
/// full disk or closed pipe is exit 2 with its line.
int printed(int code) {
  try {
    check_stdout();
  } catch (const ConfigError& e) {
    for (const auto& p : e.problems())
      std::cerr << "tpusim: error: " << escape_for_line(p.line()) << "\n";
    return 2;
  }
  return code;
}
}  // namespace

int main(int argc, char** argv) {
  // A closed pipe is a write error (EPIPE) that check_stdout reports as exit 2 with its line, as
  // the docs say, not death by SIGPIPE (141). Children (sweep points) inherit the setting.
  std::signal(SIGPIPE, SIG_IGN);
  use_checked_stdout();
  CLI::App app{"tpusim: a cycle-approximate simulator of TPU pods (v3 to v7, multislice)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tpusim ") + TPUSIM_VERSION);
  // Options of the command (--log-level) are accepted after the subcommand too.
  app.fallthrough();
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  // A point forked from a sweep's server (tools/launch/fork_server.hpp) calls this again: its
  // logger is made anew, for its own stderr.
  spdlog::drop("tpusim");
  auto logger = spdlog::stderr_color_mt("tpusim");
  spdlog::set_default_logger(logger);
  app.parse_complete_callback([&] { spdlog::set_level(spdlog::level::from_str(log_level)); });

  for (const auto& reg : command_registry()) reg(app);

  try {
    app.parse(argc, argv);
    check_stdout();  // a report lost to a full disk or a closed pipe is an error, not exit 0
  } catch (const CLI::CallForHelp& e) {
    return printed(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return printed(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return printed(app.exit(e));
  } catch (const CLI::ParseError& e) {
    const std::string hint = did_you_mean(app, std::vector<std::string>(argv + 1, argv + argc));
    std::cerr << "tpusim: error: " << escape_for_line(hint.empty() ? e.what() : hint) << "\n";
    return 2;
  } catch (const ConfigError& e) {
    for (const auto& p : e.problems())
      std::cerr << "tpusim: error: " << escape_for_line(p.line()) << "\n";
    return 2;
  } catch (const StuckError& e) {
    std::cerr << "tpusim: simulation stuck: " << escape_for_line(e.what()) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "tpusim: internal error: " << escape_for_line(e.what()) << "\n";
    return 3;
  }
  return exit_code();
}

}  // namespace tpusim::cli
