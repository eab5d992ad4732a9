#pragma once
// Typed errors. Library code throws these; only tools/ turns them into messages and exit codes.
#include <stdexcept>
#include <string>
#include <vector>

namespace tpusim {

/// One problem with the user's input: `where` names the JSON path, option or file position,
/// `what` says what is wrong and what is allowed.
struct Problem {
  std::string where;
  std::string what;
  std::string line() const { return where.empty() ? what : where + ": " + what; }
};

/// The user's input is wrong. Holds every problem found (validation reports all at once);
/// what() is one line per problem.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string where, std::string what);
  explicit ConfigError(std::vector<Problem> problems);
  const std::vector<Problem>& problems() const { return problems_; }

 private:
  std::vector<Problem> problems_;
};

/// Collects problems while validating, then throws them together.
class ProblemList {
 public:
  void add(std::string where, std::string what) {
    items_.push_back({std::move(where), std::move(what)});
  }
  bool empty() const { return items_.empty(); }
  const std::vector<Problem>& items() const { return items_; }
  /// Throws ConfigError with everything collected, if anything was.
  void throw_if_any() const;

 private:
  std::vector<Problem> items_;
};

/// A simulation that cannot finish (a collective waiting for a core that never arrives).
class StuckError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tpusim
