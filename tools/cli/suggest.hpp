#pragma once
// "Did you mean" for mistyped commands and options (the distance is core/nearest_name.hpp's).
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tpusim::cli {

/// After a failed parse: a hint naming the subcommand or option the user probably meant
/// ("did you mean 'run'?"), or "" when no argument is close to a known name.
std::string did_you_mean(CLI::App& app, const std::vector<std::string>& args);

}  // namespace tpusim::cli
