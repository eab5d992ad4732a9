#include "tools/cli/suggest.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <numeric>

#include "core/nearest_name.hpp"

namespace tpusim::cli {
namespace {

std::vector<std::string> subcommand_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

/// Long option names ("--json") of `chain`'s apps: options of a parent are accepted after a
/// subcommand too.
std::vector<std::string> option_names(const std::vector<CLI::App*>& chain) {
  std::vector<std::string> names;
  for (const auto* app : chain)
    for (const auto* opt : app->get_options())
      for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
  return names;
}

bool takes_value(const std::vector<CLI::App*>& chain, const std::string& flag) {
  for (const auto* app : chain)
    for (const auto* opt : app->get_options())
      for (const auto& l : opt->get_lnames())
        if ("--" + l == flag) return opt->get_type_size() > 0;
  return false;
}

}  // namespace

std::string did_you_mean(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<CLI::App*> chain{&app};
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) == 0) {
      const std::string flag = a.substr(0, a.find('='));
      const auto known = option_names(chain);
      if (std::find(known.begin(), known.end(), flag) == known.end()) {
        const std::string near = closest_name(flag, known);
        if (!near.empty()) return "unknown option '" + flag + "': did you mean '" + near + "'?";
      } else if (a.find('=') == std::string::npos && takes_value(chain, flag)) {
        ++i;  // the option's value is not a subcommand
      }
      continue;
    }
    if (a.rfind('-', 0) == 0) continue;
    CLI::App* current = chain.back();
    const auto subs = subcommand_names(*current);
    if (std::find(subs.begin(), subs.end(), a) != subs.end()) {
      chain.push_back(current->get_subcommand(a));
      continue;
    }
    // A positional argument of a command that has subcommands must name one of them.
    if (!subs.empty()) {
      const std::string near = closest_name(a, subs);
      if (!near.empty()) return "unknown command '" + a + "': did you mean '" + near + "'?";
    }
  }
  return "";
}

}  // namespace tpusim::cli
