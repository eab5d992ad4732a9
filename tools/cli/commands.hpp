#pragma once
// Subcommands register themselves: one file per command, one registrar line in it.
#include <functional>
#include <vector>

namespace CLI {
class App;
}

namespace tpusim::cli {

/// Adds a subcommand (with its callback) to the app.
using CommandRegistration = std::function<void(CLI::App&)>;
std::vector<CommandRegistration>& command_registry();
struct CommandRegistrar {
  explicit CommandRegistrar(CommandRegistration r) { command_registry().push_back(std::move(r)); }
};

/// The exit code a command's callback asks for (0 unless set).
int exit_code();
void set_exit_code(int code);

}  // namespace tpusim::cli
