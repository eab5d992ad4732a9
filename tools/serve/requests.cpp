#include "tools/serve/requests.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "core/errors.hpp"

namespace tpusim::serve {
namespace {

const char* kTracePath = "serving.requests.trace";

std::int64_t draw(const TokenCount& c, std::mt19937_64& rng) {
  double v = c.mean;
  if (c.kind == "uniform" && c.spread > 0) {
    v = std::uniform_real_distribution<double>(c.mean - c.spread, c.mean + c.spread)(rng);
  } else if (c.kind == "normal" && c.spread > 0) {
    v = std::normal_distribution<double>(c.mean, c.spread)(rng);
  } else if (c.kind == "lognormal" && c.spread > 0) {
    // The underlying normal's parameters for a lognormal of this mean and deviation.
    const double s2 = std::log1p(c.spread * c.spread / (c.mean * c.mean));
    v = std::lognormal_distribution<double>(std::log(c.mean) - s2 / 2, std::sqrt(s2))(rng);
  }
  return std::max<std::int64_t>(1, std::llround(v));
}

std::int64_t trace_count(const nlohmann::json& line, const char* key, std::size_t n) {
  const auto it = line.find(key);
  if (it == line.end() || !it->is_number_integer() || it->get<std::int64_t>() < 1 ||
      it->get<std::int64_t>() > 10'000'000)
    throw ConfigError(kTracePath, "line " + std::to_string(n) + ": " + key +
                                      " missing or not a whole number of tokens from 1 to 10^7");
  return it->get<std::int64_t>();
}

// A trace line's shared prefix: prefix_tokens (at most input_tokens) with a prefix_id, or none.
void read_trace_prefix(const nlohmann::json& line, std::size_t n, Request& r) {
  const auto id = line.find("prefix_id"), tokens = line.find("prefix_tokens");
  if (id == line.end() && tokens == line.end()) return;
  if (id == line.end() || !id->is_number_integer() || id->get<std::int64_t>() < 0)
    throw ConfigError(kTracePath, "line " + std::to_string(n) +
                                      ": prefix_id missing or not a whole number of 0 or more "
                                      "(a line with prefix_tokens names its prefix)");
  r.prefix_id = id->get<std::int64_t>();
  r.prefix = trace_count(line, "prefix_tokens", n);
  if (r.prefix > r.input)
    throw ConfigError(kTracePath, "line " + std::to_string(n) + ": prefix_tokens " +
                                      std::to_string(r.prefix) + " is more than its " +
                                      std::to_string(r.input) + " input_tokens");
}

std::vector<Request> read_trace(const ServingConfig& s) {
  std::ifstream in(s.trace);
  if (!in) throw ConfigError(kTracePath, s.trace + ": cannot be read");
  std::vector<Request> out;
  std::string text;
  std::size_t n = 0;
  while (std::getline(in, text) &&
         (s.count == 0 || static_cast<std::int64_t>(out.size()) < s.count)) {
    ++n;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json line = nlohmann::json::parse(text, nullptr, false);
    if (!line.is_object())
      throw ConfigError(kTracePath, "line " + std::to_string(n) + ": not a JSON object");
    Request r;
    r.input = trace_count(line, "input_tokens", n);
    r.output = trace_count(line, "output_tokens", n);
    read_trace_prefix(line, n, r);
    if (s.arrival == "timestamps") {
      const auto it = line.find("arrival_s");
      if (it == line.end() || !it->is_number() || !(it->get<double>() >= 0) ||
          !std::isfinite(it->get<double>()))
        throw ConfigError(kTracePath, "line " + std::to_string(n) +
                                          ": arrival_s missing or not a time of 0 s or more");
      r.arrival_s = it->get<double>();
    }
    out.push_back(r);
  }
  if (out.empty()) throw ConfigError(kTracePath, s.trace + ": no requests");
  return out;
}

}  // namespace

std::vector<Request> with_poisson_arrivals(std::vector<Request> requests, double rate_per_s,
                                           std::uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  double t = 0;
  for (auto& r : requests) {
    if (rate_per_s > 0) t += std::exponential_distribution<double>(rate_per_s)(rng);
    r.arrival_s = t;
  }
  return requests;
}

std::vector<Request> make_requests(const ServingConfig& s) {
  std::vector<Request> out;
  if (!s.trace.empty()) {
    out = read_trace(s);
  } else {
    std::mt19937_64 rng(s.seed);
    out.resize(static_cast<std::size_t>(s.count));
    for (auto& r : out) {
      r.input = draw(s.input, rng);
      r.output = draw(s.output, rng);
    }
    if (s.prefix_tokens > 0)
      for (std::size_t i = 0; i < out.size(); ++i) {
        out[i].prefix_id = static_cast<std::int64_t>(i) % s.prefixes;
        out[i].prefix = std::min(s.prefix_tokens, out[i].input);
      }
  }
  if (s.arrival == "poisson") return with_poisson_arrivals(std::move(out), s.rate_per_s, s.seed);
  if (s.arrival == "burst") return with_poisson_arrivals(std::move(out), 0, s.seed);
  std::stable_sort(out.begin(), out.end(),
                   [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
  return out;
}

}  // namespace tpusim::serve
