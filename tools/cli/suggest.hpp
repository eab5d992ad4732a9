#pragma once
// "Did you mean": the closest of a set of names to a mistyped word.
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tpusim::cli {

/// Levenshtein distance (insertions, deletions, substitutions; each costs 1).
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The candidate closest to `word`, if it is within max(2, |word| / 3) edits; else "".
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

/// After a failed parse: a hint naming the subcommand or option the user probably meant
/// ("did you mean 'run'?"), or "" when no argument is close to a known name.
std::string did_you_mean(CLI::App& app, const std::vector<std::string>& args);

}  // namespace tpusim::cli
