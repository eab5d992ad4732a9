#include "models/parallelism/pipeline_schedule.hpp"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

namespace tpusim {
namespace {

// Real unit j (0 .. m v - 1) of stage 0 as (microbatch, chunk). GPipe runs the chunks as
// MaxText's circular pipeline (all m microbatches through a chunk, then the next); the 1F1B
// family in groups of p microbatches per chunk (Megatron's interleaving; one chunk: in order).
// Backward units run the chunks in reverse.
std::pair<int, int> real_unit(const std::string& schedule, int j, int p, int m, int v,
                              bool forward) {
  int mb = j % m, chunk = j / m;
  if (schedule != "gpipe" && v > 1) {
    const int group = j / (p * v), in_group = j % (p * v);
    chunk = in_group / p;
    mb = group * p + in_group % p;
    // A last group of fewer than p microbatches (m not a multiple of p) runs chunk by chunk too.
    const int full = (m / p) * p * v;
    if (j >= full) {
      const int rest = m - (m / p) * p;
      chunk = (j - full) / rest;
      mb = (m / p) * p + (j - full) % rest;
    }
  }
  return {mb, forward ? chunk : v - 1 - chunk};
}

ScheduleUnit unit(const std::string& schedule, bool forward, int it, int real, int p, int m,
                  int v) {
  ScheduleUnit u;
  u.forward = forward;
  u.iteration = it;
  if (real >= 0) std::tie(u.microbatch, u.chunk) = real_unit(schedule, real, p, m, v, forward);
  return u;
}

}  // namespace

std::vector<ScheduleUnit> pipeline_units(const std::string& schedule, int p, int m, int v) {
  const int real = m * v, bubble = p - 1;
  std::vector<ScheduleUnit> out;
  int f = 0, b = 0;  // forward and backward iterations emitted
  // Stage 0: forward iterations 0 .. real - 1 are real, the rest bubble; backward iterations
  // 0 .. p - 2 are bubble, the rest real.
  auto forward = [&] {
    out.push_back(unit(schedule, true, f, f < real ? f : -1, p, m, v));
    ++f;
  };
  auto backward = [&] {
    out.push_back(unit(schedule, false, b, b >= bubble ? b - bubble : -1, p, m, v));
    ++b;
  };
  if (schedule == "gpipe") {
    while (f < real + bubble) forward();
    while (b < real + bubble) backward();
    return out;
  }
  // 1F1B family: warm-up forwards, the backward bubble (waiting for the first gradient), then
  // one backward and one forward alternating, then the rest.
  const int warmup = std::min(real, v == 1 ? p : (v - 1) * p + 2 * (p - 1) + 1);
  while (f < warmup) forward();
  while (b < bubble) backward();
  while (b < real + bubble) {
    backward();
    if (f < real + bubble) forward();
  }
  while (f < real + bubble) forward();
  return out;
}

int max_units_in_flight(const std::vector<ScheduleUnit>& units) {
  std::set<std::pair<int, int>> live;
  std::size_t most = 0;
  for (const auto& u : units) {
    if (u.microbatch < 0) continue;
    if (u.forward)
      live.insert({u.microbatch, u.chunk});
    else
      live.erase({u.microbatch, u.chunk});
    most = std::max(most, live.size());
  }
  return static_cast<int>(most);
}

}  // namespace tpusim
