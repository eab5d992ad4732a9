#pragma once
// A tiny arithmetic language for derived sweep values, e.g. "8 * cores" or "base * ici_scale".
// Numbers, variables, + - * /, unary minus, parentheses and min(a,b), max(a,b), floor(x),
// ceil(x). No general eval: nothing else parses.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tpusim::sweep {

/// A parsed expression. Variables are names of the form [A-Za-z_][A-Za-z0-9_.]* (dots allowed so
/// that an axis named by its path, e.g. workload.global_batch, can be referred to).
class Expr {
 public:
  /// Parses `text`. Throws ConfigError(where, ...) naming the column of the first problem.
  static Expr parse(const std::string& text, const std::string& where);

  /// Every variable the expression reads.
  const std::set<std::string>& variables() const { return variables_; }
  const std::string& text() const { return text_; }

  /// Evaluates with the given variable values. Throws ConfigError(where, ...) for a missing
  /// variable, a division by zero or a result that is not finite.
  double eval(const std::map<std::string, double>& vars, const std::string& where) const;

  struct Node;

 private:
  std::string text_;
  std::set<std::string> variables_;
  std::shared_ptr<const Node> root_;
};

}  // namespace tpusim::sweep
