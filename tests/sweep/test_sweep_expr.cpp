#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "tools/sweep/expr.hpp"

using tpusim::ConfigError;
using tpusim::sweep::Expr;

static double eval(const std::string& text, const std::map<std::string, double>& vars = {}) {
  return Expr::parse(text, "x").eval(vars, "x");
}

TEST_CASE("sweep expressions follow arithmetic precedence") {
  CHECK(eval("2 + 3 * 4") == 14);
  CHECK(eval("(2 + 3) * 4") == 20);
  CHECK(eval("20 / 4 / 5") == 1);
  CHECK(eval("10 - 4 - 3") == 3);
  CHECK(eval("-2 * -3") == 6);
  CHECK(eval("1.5e2") == 150);
}

TEST_CASE("sweep expressions read variables including dotted axis names") {
  CHECK(eval("8 * cores", {{"cores", 32}}) == 256);
  CHECK(eval("workload.global_batch / chips", {{"workload.global_batch", 512}, {"chips", 16}}) ==
        32);
  auto e = Expr::parse("base * scale + chips", "x");
  CHECK(e.variables() == std::set<std::string>{"base", "scale", "chips"});
}

TEST_CASE("sweep expressions offer min max floor and ceil") {
  CHECK(eval("min(3, 7)") == 3);
  CHECK(eval("max(3, 7)") == 7);
  CHECK(eval("floor(7 / 2)") == 3);
  CHECK(eval("ceil(7 / 2)") == 4);
}

TEST_CASE("sweep expressions reject anything but arithmetic") {
  CHECK_THROWS_AS(Expr::parse("system(1)", "axes[0].expr"), ConfigError);
  CHECK_THROWS_WITH(Expr::parse("2 +", "axes[0].expr"),
                    Catch::Contains("axes[0].expr") && Catch::Contains("column 4"));
  CHECK_THROWS_WITH(Expr::parse("2 ; 3", "e"), Catch::Contains("unexpected ';'"));
  CHECK_THROWS_WITH(Expr::parse("min(1)", "e"), Catch::Contains("min takes 2"));
  CHECK_THROWS_WITH(Expr::parse("(1 + 2", "e"), Catch::Contains("expected ')'"));
}

TEST_CASE("sweep expressions report division by zero and unknown variables when evaluated") {
  CHECK_THROWS_WITH(eval("1 / (chips - 4)", {{"chips", 4}}), Catch::Contains("divides by zero"));
  CHECK_THROWS_WITH(eval("cores * 2"), Catch::Contains("'cores'"));
}

TEST_CASE("expressions nest up to kMaxExprDepth levels and no deeper") {
  using tpusim::kMaxExprDepth;
  const int ok = kMaxExprDepth / 2 - 1;  // each parenthesis level and each chain link counts one
  CHECK(eval(std::string(ok, '(') + "1" + std::string(ok, ')')) == 1);
  std::string chain = "1";
  for (int i = 1; i < ok; ++i) chain += "+1";
  CHECK(eval(chain) == ok);
  CHECK(eval(std::string(ok, '-') + "1") == (ok % 2 ? -1 : 1));
  const int deep = kMaxExprDepth + 1;
  std::string long_chain = "1";
  for (int i = 1; i < deep; ++i) long_chain += "+1";
  for (const std::string& text : {std::string(deep, '(') + "1" + std::string(deep, ')'),
                                  std::string(deep, '-') + "1", long_chain})
    CHECK_THROWS_WITH(Expr::parse(text, "x"), Catch::Contains("kMaxExprDepth"));
}
