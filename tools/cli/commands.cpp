#include "tools/cli/commands.hpp"

namespace tpusim::cli {
namespace {
int g_exit_code = 0;  // set once by the one command a process runs
}
std::vector<CommandRegistration>& command_registry() {
  static std::vector<CommandRegistration> list;
  return list;
}
int exit_code() { return g_exit_code; }
void set_exit_code(int code) { g_exit_code = code; }
}  // namespace tpusim::cli
