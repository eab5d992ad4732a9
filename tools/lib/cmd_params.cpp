// tpusim params: every declared parameter with its unit, default and meaning.
#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/params.hpp"
#include "tools/lib/commands.hpp"

namespace tpusim::cli {
namespace {

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
      if (std::isfinite(s.min)) j["min"] = s.min;
      if (std::isfinite(s.max)) j["max"] = s.max;
      if (s.label) j["label"] = true;
      out.push_back(j);
      continue;
    }
    std::string when =
        s.when_path.empty() ? "" : "  [when " + s.when_path + "=" + s.when_value + "]";
    if (s.label) when += "  [label: for reports only]";
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
  cmd->add_flag("--json", *as_json, "print a JSON array");
  cmd->add_option("filter", *filter, "only parameters whose path contains this text");
  cmd->callback([=] { run_params(*as_json, *filter); });
}};

}  // namespace
}  // namespace tpusim::cli
