#include "tools/sweep/expr.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/errors.hpp"
#include "core/limits.hpp"

namespace tpusim::sweep {

struct Expr::Node {
  enum Kind { Number, Variable, Neg, Add, Sub, Mul, Div, Call } kind = Number;
  double number = 0;
  std::string name;  ///< variable or function name
  std::vector<std::shared_ptr<const Node>> args;
  int depth = 1;  ///< levels of the subtree (bounded by kMaxExprDepth)
};

namespace {
using NodePtr = std::shared_ptr<const Expr::Node>;

struct FunctionInfo {
  const char* name;
  std::size_t arity;
};
constexpr FunctionInfo kFunctions[] = {{"min", 2}, {"max", 2}, {"floor", 1}, {"ceil", 1}};

/// Recursive-descent parser over one string; positions in errors are 1-based columns.
class Parser {
 public:
  Parser(const std::string& text, const std::string& where, std::set<std::string>& vars)
      : text_(text), where_(where), vars_(vars) {}

  NodePtr parse_all() {
    NodePtr n = sum();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    // A long expression is cut in the message; the column still points into the whole text.
    const std::string shown = text_.size() > 80 ? text_.substr(0, 77) + "..." : text_;
    throw ConfigError(where_, "in expression \"" + shown + "\" at column " +
                                  std::to_string(pos_ + 1) + ": " + what +
                                  " (allowed: numbers, variables, + - * /, parentheses, min, max, "
                                  "floor, ceil)");
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  NodePtr make(Expr::Node::Kind k, std::vector<NodePtr> args) const {
    auto n = std::make_shared<Expr::Node>();
    n->kind = k;
    for (const auto& a : args) n->depth = std::max(n->depth, a->depth + 1);
    if (n->depth > kMaxExprDepth) too_deep();
    n->args = std::move(args);
    return n;
  }

  // Recursion is bounded twice: parsing nests one level per parenthesis and unary minus (Level),
  // and evaluating and freeing the tree recurse as deep as it is, which a chain of operators
  // makes left-deep (make() checks each node's depth).
  [[noreturn]] void too_deep() const {
    fail("nested deeper than " + std::to_string(kMaxExprDepth) + " levels, " +
         past_limit(kMaxExprDepth, "levels", "kMaxExprDepth"));
  }
  struct Level {
    Parser& p;
    explicit Level(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxExprDepth) p.too_deep();
    }
    ~Level() { --p.depth_; }
  };
  NodePtr sum() {
    NodePtr left = product();
    for (;;) {
      if (take('+'))
        left = make(Expr::Node::Add, {left, product()});
      else if (take('-'))
        left = make(Expr::Node::Sub, {left, product()});
      else
        return left;
    }
  }
  NodePtr product() {
    NodePtr left = unary();
    for (;;) {
      if (take('*'))
        left = make(Expr::Node::Mul, {left, unary()});
      else if (take('/'))
        left = make(Expr::Node::Div, {left, unary()});
      else
        return left;
    }
  }
  NodePtr unary() {
    if (take('-')) {
      Level level(*this);
      return make(Expr::Node::Neg, {unary()});
    }
    return primary();
  }
  NodePtr primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("expression ends too early");
    const char c = text_[pos_];
    if (c == '(') {
      Level level(*this);
      ++pos_;
      NodePtr inner = sum();
      if (!take(')')) fail("expected ')'");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return name();
    fail("unexpected '" + std::string(1, c) + "'");
  }
  NodePtr number() {
    const char* begin = text_.c_str() + pos_;
    char* end = nullptr;
    double v = std::strtod(begin, &end);
    if (end == begin) fail("malformed number");
    pos_ += static_cast<std::size_t>(end - begin);
    auto n = std::make_shared<Expr::Node>();
    n->number = v;
    return n;
  }
  NodePtr name() {
    std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_' || text_[pos_] == '.'))
      ++pos_;
    std::string id = text_.substr(start, pos_ - start);
    if (!take('(')) {
      auto n = std::make_shared<Expr::Node>();
      n->kind = Expr::Node::Variable;
      n->name = id;
      vars_.insert(id);
      return n;
    }
    const FunctionInfo* fn = nullptr;
    for (const auto& f : kFunctions)
      if (id == f.name) fn = &f;
    if (!fn) {
      pos_ = start;
      fail("unknown function '" + id + "'");
    }
    Level level(*this);
    std::vector<NodePtr> args{sum()};
    while (take(',')) args.push_back(sum());
    if (!take(')')) fail("expected ')' after the arguments of " + id);
    if (args.size() != fn->arity)
      fail(id + " takes " + std::to_string(fn->arity) + " argument(s), got " +
           std::to_string(args.size()));
    auto n = make(Expr::Node::Call, std::move(args));
    std::const_pointer_cast<Expr::Node>(n)->name = id;
    return n;
  }

  const std::string& text_;
  const std::string& where_;
  std::set<std::string>& vars_;
  std::size_t pos_ = 0;
  int depth_ = 0;  ///< nesting of parentheses and unary minus being parsed
};

double eval_node(const Expr::Node& n, const std::map<std::string, double>& vars,
                 const std::string& where, const std::string& text) {
  auto arg = [&](std::size_t i) { return eval_node(*n.args[i], vars, where, text); };
  switch (n.kind) {
    case Expr::Node::Number:
      return n.number;
    case Expr::Node::Variable: {
      auto it = vars.find(n.name);
      if (it == vars.end())
        throw ConfigError(where, "expression \"" + text + "\" reads '" + n.name +
                                     "', which has no numeric value here");
      return it->second;
    }
    case Expr::Node::Neg:
      return -arg(0);
    case Expr::Node::Add:
      return arg(0) + arg(1);
    case Expr::Node::Sub:
      return arg(0) - arg(1);
    case Expr::Node::Mul:
      return arg(0) * arg(1);
    case Expr::Node::Div: {
      double d = arg(1);
      if (d == 0) throw ConfigError(where, "expression \"" + text + "\" divides by zero");
      return arg(0) / d;
    }
    case Expr::Node::Call:
      if (n.name == "min") return std::min(arg(0), arg(1));
      if (n.name == "max") return std::max(arg(0), arg(1));
      if (n.name == "floor") return std::floor(arg(0));
      return std::ceil(arg(0));
  }
  return 0;
}
}  // namespace

Expr Expr::parse(const std::string& text, const std::string& where) {
  Expr e;
  e.text_ = text;
  Parser p(e.text_, where, e.variables_);
  e.root_ = p.parse_all();
  return e;
}

double Expr::eval(const std::map<std::string, double>& vars, const std::string& where) const {
  double v = eval_node(*root_, vars, where, text_);
  if (!std::isfinite(v))
    throw ConfigError(where, "expression \"" + text_ + "\" gives a non-finite value");
  return v;
}

}  // namespace tpusim::sweep
