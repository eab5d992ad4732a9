// tpusim params: every declared parameter with its unit, default and meaning.
#include <CLI/CLI.hpp>
#include <memory>

#include "core/errors.hpp"
#include "tools/cli/commands.hpp"
#include "tools/report/param_list.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kParamsRegister{[](CLI::App& app) {
  auto* cmd =
      app.add_subcommand("params", "List every parameter with type, unit, default and meaning");
  auto as_json = std::make_shared<bool>(false);
  auto filter = std::make_shared<std::string>();
  auto classes = std::make_shared<bool>(false);
  cmd->add_flag("--json", *as_json, "print a JSON array");
  cmd->add_flag("--memory-classes", *classes,
                "list the classes of the memory report (dtype, lifetime, source) instead");
  cmd->add_option("filter", *filter, "only parameters whose path contains this text");
  cmd->callback([=] {
    if (*classes && !filter->empty())
      throw ConfigError("--memory-classes",
                        "lists every class and takes no filter (got '" + *filter + "')");
    if (*classes)
      list_memory_classes(*as_json);
    else
      run_params(*as_json, *filter);
  });
}};

}  // namespace
}  // namespace tpusim::cli
