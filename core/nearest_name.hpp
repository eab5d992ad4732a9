#pragma once
// "Did you mean": the closest of a set of names to a mistyped word, for commands and options
// (tools/cli/suggest) and for JSON keys and choice values (core/params).
#include <string>
#include <vector>

namespace tpusim {

/// Levenshtein distance (insertions, deletions, substitutions; each costs 1).
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The candidate closest to `word`, if it is within max(2, |word| / 3) edits; else "".
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

/// "; did you mean 'NAME'?" for the closest candidate, or "" when none is close.
std::string did_you_mean_suffix(const std::string& word,
                                const std::vector<std::string>& candidates);

}  // namespace tpusim
