// The serving library's pieces with closed forms: percentiles of known values, the drawn
// request lengths against their distributions' moments, Poisson gaps against their rate.
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "tools/serve/requests.hpp"
#include "tools/serve/serve_metrics.hpp"

using namespace tpusim::serve;

TEST_CASE("Percentiles of 1..100 are linear between the closest ranks") {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  // Rank p/100 x 99 of the sorted values 1..100: value 1 + rank.
  CHECK(percentile(v, 50) == Approx(50.5));
  CHECK(percentile(v, 90) == Approx(90.1));
  CHECK(percentile(v, 99) == Approx(99.01));
  CHECK(percentile(v, 0) == Approx(1));
  CHECK(percentile(v, 100) == Approx(100));
  const auto s = summary(v);
  CHECK(s["mean"].get<double>() == Approx(50.5));
  CHECK(s["max"].get<double>() == Approx(100));
  CHECK(percentile({}, 50) == 0);
}

TEST_CASE("Percentiles of a large uniform sample approach the uniform's quantiles") {
  ServingConfig s;
  s.count = 20000;
  s.arrival = "burst";
  s.input = {"uniform", 1000, 500};  // 500..1500
  s.output = {"fixed", 10, 0};
  const auto r = make_requests(s);
  std::vector<double> in;
  for (const auto& x : r) in.push_back(static_cast<double>(x.input));
  CHECK(percentile(in, 50) == Approx(1000).epsilon(0.01));
  CHECK(percentile(in, 90) == Approx(1400).epsilon(0.01));
  CHECK(percentile(in, 99) == Approx(1490).epsilon(0.01));
  for (const auto& x : r) CHECK(x.output == 10);
}

TEST_CASE("Lognormal lengths have the mean and deviation asked for, Poisson gaps the rate") {
  ServingConfig s;
  s.count = 50000;
  s.arrival = "poisson";
  s.rate_per_s = 50;
  s.input = {"lognormal", 300, 150};
  s.output = {"normal", 200, 20};
  const auto r = make_requests(s);
  double sum = 0, sq = 0, out = 0;
  for (const auto& x : r) {
    sum += static_cast<double>(x.input);
    sq += static_cast<double>(x.input) * static_cast<double>(x.input);
    out += static_cast<double>(x.output);
  }
  const double n = static_cast<double>(r.size()), mean = sum / n;
  CHECK(mean == Approx(300).epsilon(0.02));
  CHECK(std::sqrt(sq / n - mean * mean) == Approx(150).epsilon(0.05));
  CHECK(out / n == Approx(200).epsilon(0.01));
  // n arrivals of a Poisson process at rate 50/s span about n / 50 s.
  CHECK(r.back().arrival_s == Approx(n / 50).epsilon(0.02));
  for (std::size_t i = 1; i < r.size(); ++i) REQUIRE(r[i].arrival_s >= r[i - 1].arrival_s);
}
