#include "sim/machine/host.hpp"

#include <algorithm>
#include <string>

#include "core/params.hpp"
#include "sim/kernel/event_queue.hpp"
#include "sim/kernel/failure.hpp"

namespace tpusim {
namespace {
using T = ParamType;

// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kHostParams{{
    // 4 chips (8 TensorCores) per host: a Cloud TPU v3 host board (v3-8). The mlperf07 system
    // files describe 8 chips per host (4x2); a study can set that.
    {"hardware.host.chips_per_host", T::Integer, "chips", 4, "chips fed by one host (tpusim train): its preprocessing serves all their cores", 1, 1 << 20},
    // About 15 GB/s per chip: the scaling book's TPU chapter (PCIe host link).
    {"hardware.host.pcie_GBps", T::Number, "GB/s", 15.0, "host-to-chip PCIe bandwidth per chip, for infeed (tpusim train)", 1e-6, 1e6},
    {"hardware.host.infeed_queue_batches", T::Integer, "batches", 2, "batches a core's infeed queue holds (2: double-buffered); the host runs at most this far ahead of the core (tpusim train)", 1, 1024},
}};
// clang-format on

}  // namespace

HostOptions HostOptions::from_config(const Config& cfg) {
  HostOptions o;
  o.chips_per_host = static_cast<int>(cfg.integer("hardware.host.chips_per_host"));
  o.pcie_per_chip = cfg.GBps("hardware.host.pcie_GBps");
  o.queue_batches = static_cast<int>(cfg.integer("hardware.host.infeed_queue_batches"));
  return o;
}

HostSet::HostSet(int chips, int cores_per_chip, const HostOptions& options, const InfeedPlan& plan,
                 EventQueue& queue, std::function<void(int)> wake)
    : plan_(plan), queue_(queue), wake_(std::move(wake)) {
  const int cores = chips * cores_per_chip;
  const std::size_t batches = plan.batch_examples.size();
  arrival_.assign(cores, std::vector<Duration>(batches, Duration::ps(-1)));
  waiting_since_.assign(cores, Duration{});
  waiting_.assign(cores, false);
  stats_.assign(batches, InfeedBatchStats{});
  const int hosts = (chips + options.chips_per_host - 1) / options.chips_per_host;
  for (int h = 0; h < hosts; ++h) {
    const int first = h * options.chips_per_host;
    const int n = std::min(options.chips_per_host, chips - first);
    hosts_.push_back(std::make_unique<Host>(("host" + std::to_string(h)).c_str(), *this, first, n,
                                            cores_per_chip, chips, options));
    host_of_core_.insert(host_of_core_.end(), static_cast<std::size_t>(n) * cores_per_chip, h);
  }
}

HostSet::~HostSet() = default;

bool HostSet::available(int core, int batch, Duration now) {
  const Duration a = arrival_[core][batch];
  if (a >= Duration{} && a <= now) return true;
  if (!waiting_[core]) {
    waiting_[core] = true;
    waiting_since_[core] = now;
  }
  return false;
}

void HostSet::dequeue(int core, int batch, Duration now) {
  InfeedBatchStats& s = stats_[batch];
  if (waiting_[core]) {
    s.stall = max(s.stall, now - waiting_since_[core]);
    waiting_[core] = false;
  }
  s.started = max(s.started, now);
  hosts_[host_of_core_[core]]->dequeued(batch);
}

void HostSet::arrived(int core, int batch, Duration when) {
  arrival_[core][batch] = when;
  stats_[batch].arrived = max(stats_[batch].arrived, when);
  queue_.at(when, [this, core] { wake_(core); });
}

Host::Host(sc_core::sc_module_name name, HostSet& set, int first_chip, int chips,
           int cores_per_chip, int total_chips, const HostOptions& options)
    : sc_core::sc_module(name),
      set_(set),
      first_core_(first_chip * cores_per_chip),
      cores_(chips * cores_per_chip),
      share_(static_cast<double>(chips) / total_chips),
      options_(options),
      taken_(set.plan_.batch_examples.size(), 0),
      pcie_free_(chips, Duration{}) {
  SC_METHOD(guarded_work);
  sensitive << wake_;
  // Runs once at time zero (SC_METHODs are initialised): the first batch starts at run_start.
}

void Host::dequeued(int batch) {
  ++taken_[batch];
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void Host::guarded_work() {
  guarded([this] { work(); });
}

void Host::work() {
  const Duration now = sim_now();
  const InfeedPlan& plan = set_.plan_;
  const int batches = static_cast<int>(plan.batch_examples.size());
  const double examples = next_ < batches ? plan.batch_examples[next_] * share_ : 0;
  if (busy_ && now < done_at_) {  // woken early by a dequeue: keep preprocessing
    wake_.notify(to_sc(done_at_ - now));
    return;
  }
  if (busy_) {
    // Batch next_ is preprocessed: copy each chip's share over its PCIe link (FIFO per link).
    busy_ = false;
    const int chips = static_cast<int>(pcie_free_.size());
    const int cores_per_chip = cores_ / chips;
    const Duration copy =
        options_.pcie_per_chip.time_for(examples / chips * plan.batch_example_bytes[next_]);
    for (int c = 0; c < chips; ++c) {
      pcie_free_[c] = max(pcie_free_[c], now) + copy;
      for (int k = 0; k < cores_per_chip; ++k)
        set_.arrived(first_core_ + c * cores_per_chip + k, next_, pcie_free_[c]);
    }
    ++next_;
  }
  if (next_ >= batches) return;
  // The queue slot of batch next_ is the one batch next_ - queue_batches used.
  const int freed = next_ - options_.queue_batches;
  if (freed >= 0 && taken_[freed] < cores_) return;  // woken again by dequeued()
  busy_ = true;
  const double n = plan.batch_examples[next_] * share_;
  const Duration preprocess = Duration::seconds(n / plan.examples_per_s_per_host);
  done_at_ = now + preprocess;
  wake_.notify(to_sc(preprocess));
}

}  // namespace tpusim
