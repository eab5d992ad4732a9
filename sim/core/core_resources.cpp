#include "sim/core/core_resources.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/core/ici_port.hpp"
#include "sim/core/memory.hpp"
#include "sim/core/sc_delay.hpp"
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
  // Merge adjacent intervals in the touched range [lo, touched).
  const std::size_t touched = std::min(iv_.size(), i + 2);
  std::size_t w = lo;
  for (std::size_t r = lo + 1; r < touched; ++r) {
    if (iv_[r].first <= iv_[w].second) {
      iv_[w].second = std::max(iv_[w].second, iv_[r].second);
      iv_[r].first = iv_[r].second = Duration::ps(-1);  // merged away
    } else {
      w = r;
    }
  }
  // Only the touched range holds merged-away entries; what follows it moves down once.
  const auto end = iv_.begin() + static_cast<std::ptrdiff_t>(touched);
  iv_.erase(std::remove_if(iv_.begin() + static_cast<std::ptrdiff_t>(lo), end,
                           [](const auto& v) { return v.first == Duration::ps(-1); }),
            end);
  return t;
}

DmaEngines::DmaEngines(const char* name, int engines)
    : tlm_utils::multi_passthrough_initiator_socket<DmaEngines>(name),
      StatGroup("dma"),
      engines_(engines) {
  access_ = new MemoryAccess;
  payload_.set_extension(access_);
  payload_.set_command(tlm::TLM_IGNORE_COMMAND);
  transfer_ = new IciTransfer;
  send_payload_.set_extension(transfer_);
  send_payload_.set_command(tlm::TLM_IGNORE_COMMAND);
  reserve_stats(4);
  add_stat("busy_ns", "ns",
           "engine time: each collective stream from its issue until its data is through, summed "
           "(the report's occupancy.dma_busy_ms on the last core)",
           [this] { return busy_.ns(); });
  add_stat("waiting_ns", "ns",
           "time collective steps waited for a free engine (hardware.dma.engines_per_core)",
           [this] { return waiting_.ns(); });
  add_stat("streams", "streams", "collective streams issued",
           [this] { return static_cast<double>(streams_); });
  add_stat("peak_in_flight", "streams", "most streams in flight at once",
           [this] { return static_cast<double>(peak_); });
}

void DmaEngines::connect(const Targets& t) {
  int bound = 0;
  bind(t.hbm->target_socket());
  ++bound;
  if (t.cmem) {
    bind(t.cmem->target_socket());
    cmem_target_ = bound++;
  }
  bind(t.vmem->target_socket());
  vmem_target_ = bound++;
  bind(*t.ici);
  ici_target_ = bound;
  direct_hbm_ = t.direct_hbm;
  direct_cmem_ = t.direct_cmem;
  direct_vmem_ = t.direct_vmem;
  direct_ici_ = t.direct_ici;
}

Duration DmaEngines::transport(int target, tlm::tlm_generic_payload& payload, Duration start) {
  payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  const Duration now = sim_now();
  sc_core::sc_time delay = sc_delay(start - now);
  (*this)[target]->b_transport(payload, delay);
  if (!payload.is_response_ok())
    throw std::logic_error(std::string("tpusim: a target of ") + name() + " answered " +
                           payload.get_response_string());
  return now + from_sc(delay);
}

Duration DmaEngines::access(Duration start, const MemoryAccess& a) {
  if (direct_hbm_) return direct_hbm_->serve(start, a);
  *access_ = a;
  return transport(0, payload_, start);
}

Duration DmaEngines::access_cmem(Duration start, const MemoryAccess& a) {
  if (direct_cmem_) return direct_cmem_->serve(start, a);
  if (cmem_target_ < 0) return start;
  *access_ = a;
  return transport(cmem_target_, payload_, start);
}

Duration DmaEngines::access_vmem(Duration start, const MemoryAccess& a) {
  if (direct_vmem_) return direct_vmem_->serve(start, a);
  *access_ = a;
  return transport(vmem_target_, payload_, start);
}

Duration DmaEngines::send(Duration through, const IciTransfer& t) {
  if (direct_ici_) return direct_ici_->serve(through, t);
  *transfer_ = t;
  return transport(ici_target_, send_payload_, through);
}

namespace {
/// The model `factory` makes under `name`, or null for the built-in.
std::unique_ptr<CoreMemory> plugged(const MemoryFactory* factory, const char* name,
                                    const HardwareSpec& hw) {
  if (!factory || !*factory) return nullptr;
  auto model = (*factory)(name, hw);
  if (!model) throw std::logic_error("tpusim: the memory factory made no memory model");
  return model;
}

/// Makes `slot` the model `factory` makes under `name`, or the built-in on-chip memory; returns
/// the built-in when the DMA engines reach it directly, else null.
OnChipMemory* on_chip(std::unique_ptr<CoreMemory>& slot, const MemoryFactory* factory,
                      const char* name, const HardwareSpec& hw, bool direct) {
  slot = plugged(factory, name, hw);
  if (slot) return nullptr;
  auto built_in = std::make_unique<OnChipMemory>(name);
  OnChipMemory* d = direct ? built_in.get() : nullptr;
  slot = std::move(built_in);
  return d;
}
}  // namespace

CoreResources::CoreResources(const HardwareSpec& hw, const CoreParts& parts)
    : memory_(plugged(parts.memory, "hbm", hw)),
      dma("dma", hw.dma_engines_per_core),
      hw_(hw),
      shared_(parts.shared) {
  Hbm* direct_hbm = nullptr;
  if (!memory_) {
    auto built_in = std::make_unique<Hbm>("hbm");
    if (parts.direct) direct_hbm = built_in.get();
    memory_ = std::move(built_in);
  }
  OnChipMemory* direct_cmem = nullptr;
  if (hw.cmem_bytes_per_chip > 0)
    direct_cmem = on_chip(cmem_, parts.cmem, "cmem", hw, parts.direct);
  OnChipMemory* direct_vmem = on_chip(vmem_, parts.vmem, "vmem", hw, parts.direct);
  ici_ = std::make_unique<IciPort>("ici");
  dma.connect({memory_.get(), cmem_.get(), vmem_.get(), ici_.get(), direct_hbm, direct_cmem,
               direct_vmem, parts.direct ? ici_.get() : nullptr});
}

CoreResources::~CoreResources() = default;

bool CoreResources::exclusive_from(Duration t) const {
  return !shared_ && mxu.idle_after(t) && vpu.idle_after(t) && memory_->idle_after(t);
}

Duration CoreResources::compute(Duration start, const OpDemand& d, Duration natural,
                                MemoryAccess& access, const MemoryAccess& vmem,
                                const MemoryAccess* cmem) {
  const Duration m = mxu.grant(start, d.mxu);
  const Duration v = vpu.grant(start, d.vpu);
  Duration h = start;
  if (d.hbm > Duration{}) {
    access.work = d.hbm;
    access.latency = d.hbm_latency;
    access.uncontended = false;
    h = dma.access_vmem(dma.access(start, access), vmem);
  }
  if (cmem) h = std::max(h, dma.access_cmem(start, *cmem));
  return std::max(start + natural, std::max(std::max(m, v), h) + hw_.op_overhead);
}

Duration CoreResources::communicate(Duration start, MemoryAccess& access, double hbm_bytes,
                                    Duration vpu_work, int hbm_latencies) {
  access.work = hbm_bytes > 0
                    ? (hw_.hbm_bandwidth_per_core * hw_.hbm_efficiency).time_for(hbm_bytes)
                    : Duration{};
  access.latency = hw_.hbm_latency * hbm_latencies;
  access.uncontended = false;
  const Duration h = dma.access(start, access);
  return std::max(h, vpu.grant(start, vpu_work));
}

}  // namespace tpusim
