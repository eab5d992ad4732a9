#include "sim/core/core_resources.hpp"

#include <algorithm>

#include "sim/kernel/event_queue.hpp"

namespace tpusim {

void CoreResource::prune(Duration now) {
  while (head_ < iv_.size() && iv_[head_].second <= now) ++head_;
  if (head_ > 64 && head_ * 2 > iv_.size()) {
    iv_.erase(iv_.begin(), iv_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

Duration CoreResource::grant(Duration from, Duration work) {
  if (work <= Duration{}) return from;
  busy_ += work;
  prune(sim_now());
  // Common case: nothing granted at or after `from`.
  if (idle_after(from)) {
    if (head_ < iv_.size() && iv_.back().second == from)
      iv_.back().second = from + work;
    else
      iv_.emplace_back(from, from + work);
    return from + work;
  }
  // Fill the gaps from `from` on, then merge what became adjacent.
  auto first = std::partition_point(iv_.begin() + static_cast<std::ptrdiff_t>(head_), iv_.end(),
                                    [&](const auto& v) { return v.second <= from; });
  std::size_t i = static_cast<std::size_t>(first - iv_.begin());
  const std::size_t lo = i > head_ ? i - 1 : i;
  Duration t = from, left = work;
  while (left > Duration{}) {
    if (i == iv_.size()) {
      iv_.emplace_back(t, t + left);
      t += left;
      left = Duration{};
      break;
    }
    if (iv_[i].first > t) {
      const Duration use = std::min(iv_[i].first - t, left);
      iv_.insert(iv_.begin() + static_cast<std::ptrdiff_t>(i), {t, t + use});
      ++i;
      t += use;
      left -= use;
      if (left == Duration{}) break;
    }
    t = std::max(t, iv_[i].second);
    ++i;
  }
  // Merge adjacent intervals in the touched range.
  std::size_t w = lo;
  for (std::size_t r = lo + 1; r < iv_.size() && r <= i + 1; ++r) {
    if (iv_[r].first <= iv_[w].second) {
      iv_[w].second = std::max(iv_[w].second, iv_[r].second);
      iv_[r].first = iv_[r].second = Duration::ps(-1);  // merged away
    } else {
      w = r;
    }
  }
  iv_.erase(std::remove_if(iv_.begin() + static_cast<std::ptrdiff_t>(lo), iv_.end(),
                           [](const auto& v) { return v.first == Duration::ps(-1); }),
            iv_.end());
  return t;
}

CoreResources::CoreResources(const HardwareSpec& hw, bool shared)
    : mxu("mxu"),
      vpu("vpu"),
      hbm("hbm"),
      dma("dma", hw.dma_engines_per_core),
      hw_(hw),
      shared_(shared) {}

Duration CoreResources::compute(Duration start, const OpDemand& d, Duration natural) {
  const Duration m = mxu.grant(start, d.mxu);
  const Duration v = vpu.grant(start, d.vpu);
  const Duration h = d.hbm > Duration{} ? hbm.grant(start, d.hbm) + d.hbm_latency : start;
  return std::max(start + natural, std::max(std::max(m, v), h) + hw_.op_overhead);
}

Duration CoreResources::communicate(Duration start, double hbm_bytes, Duration vpu_work,
                                    int hbm_latencies) {
  const Duration work = hbm_bytes > 0
                            ? (hw_.hbm_bandwidth_per_core * hw_.hbm_efficiency).time_for(hbm_bytes)
                            : Duration{};
  const Duration h = hbm.grant(start, work) + hw_.hbm_latency * hbm_latencies;
  return std::max(h, vpu.grant(start, vpu_work));
}

}  // namespace tpusim
