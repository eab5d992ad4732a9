// tpusim params: every declared parameter with its unit, default and meaning.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/params.hpp"
#include "models/memory/memory_classes.hpp"
#include "tools/lib/commands.hpp"

namespace tpusim::cli {
namespace {

// The classes of the memory report: name, dtype, lifetime and source (docs/memory.md).
void list_memory_classes(bool as_json) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : memory_classes()) {
    if (as_json) {
      out.push_back({{"class", to_string(c.cls)},
                     {"dtype", c.dtype},
                     {"lives", c.lives},
                     {"source", c.source}});
      continue;
    }
    std::cout << to_string(c.cls) << "  " << c.dtype << ", lives " << c.lives << "\n    "
              << c.source << "\n";
  }
  if (as_json) std::cout << out.dump(2) << "\n";
}

void run_params(bool as_json, const std::string& filter) {
  const auto& specs = ParamRegistry::instance().all();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : specs) {
    if (!filter.empty() && s.path.find(filter) == std::string::npos) continue;
    if (as_json) {
      nlohmann::json j{{"path", s.path},
                       {"type", to_string(s.type)},
                       {"unit", s.unit},
                       {"default", s.default_value},
                       {"meaning", s.meaning}};
      if (!s.choices.empty()) j["choices"] = s.choices;
      if (!s.when_path.empty()) j["when"] = s.when_path + "=" + s.when_value;
      out.push_back(j);
      continue;
    }
    std::string when =
        s.when_path.empty() ? "" : "  [when " + s.when_path + "=" + s.when_value + "]";
    std::string choices;
    for (const auto& c : s.choices) choices += (choices.empty() ? " (one of " : ", ") + c;
    if (!choices.empty()) choices += ")";
    std::cout << s.path << "  " << to_string(s.type) << (s.unit.empty() ? "" : ", " + s.unit)
              << "  default " << (s.default_value.is_null() ? "(required)" : s.default_value.dump())
              << when << "\n    " << s.meaning << choices << "\n";
  }
  if (as_json) std::cout << out.dump(2) << "\n";
}

const CommandRegistrar kRegister{[](CLI::App& app) {
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
