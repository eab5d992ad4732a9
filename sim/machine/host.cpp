#include "sim/machine/host.hpp"

#include <algorithm>
#include <string>

#include "core/hardware.hpp"
#include "core/param_handle.hpp"
#include "sim/kernel/event_queue.hpp"
#include "sim/kernel/failure.hpp"

namespace tpusim {
namespace {
using T = ParamType;

// One parameter per line reads as a table.
// clang-format off
// 96: ASSUMPTION. The mlperf07 system files give 2 CPU sockets per host but no core count;
// a Cloud TPU v3 host (v3-8 TPU VM) has 96 vCPUs (2 sockets x 24 cores x 2 threads), taken
// here for the 8-chip host. A core here is one vCPU of the speed measured by
// tools/bench/host_ops.cpp (docs/train.md).
const Param<std::int64_t> kHardwareHostCpuCores{{"hardware.host.cpu_cores", T::Integer, "cores", 96, "CPU cores (vCPUs) of one host that run its input pipeline in parallel (tpusim train)", 1, 1 << 20}};
// 8: ASSUMPTION. The mlperf07 code feeds the infeed queues from a pool of infeed threads
// whose size the reference does not give; one thread per chip of the 4x2 host keeps a
// host's copies side by side. A copy holds its thread for its PCIe transfer.
const Param<std::int64_t> kHardwareHostInfeedThreads{{"hardware.host.infeed_threads", T::Integer, "threads", 8, "threads of a host that copy its batches to its chips, each copy (one chip's share) holding a thread for its PCIe transfer; fewer threads than chips queue the copies (tpusim train)", 1, 1 << 20}};
const Param<std::int64_t> kHardwareHostInfeedQueueBatches{{"hardware.host.infeed_queue_batches", T::Integer, "batches", 2, "batches a core's infeed queue holds (2: double-buffered); the host runs at most this far ahead of the core (tpusim train)", 1, 1024}};
// clang-format on

}  // namespace

HostOptions HostOptions::from_config(const Config& cfg) {
  HostOptions o;
  o.chip_block = host_chip_block(cfg);
  o.cpu_cores = static_cast<int>(kHardwareHostCpuCores(cfg));
  o.pcie_per_chip = Bandwidth::GBps(kHardwareHostPcieGBps(cfg));
  o.queue_batches = static_cast<int>(kHardwareHostInfeedQueueBatches(cfg));
  o.infeed_threads = static_cast<int>(kHardwareHostInfeedThreads(cfg));
  return o;
}

HostSet::HostSet(const Topology& topology, int devices_per_chip, const HostOptions& options,
                 const InfeedPlan& plan, EventQueue& queue, std::function<void(int)> wake)
    : plan_(plan), queue_(queue), wake_(std::move(wake)) {
  const int chips = topology.num_chips();
  const int cores = chips * devices_per_chip;
  const std::size_t batches = plan.batch_examples.size();
  arrival_.assign(cores, std::vector<Duration>(batches, Duration::ps(-1)));
  waiting_since_.assign(cores, Duration{});
  waiting_.assign(cores, false);
  stats_.assign(batches, InfeedBatchStats{});
  const HostBlocks blocks = host_blocks(topology, options.chip_block);
  host_of_core_.assign(cores, -1);
  for (std::size_t h = 0; h < blocks.chips.size(); ++h) {
    hosts_.push_back(std::make_unique<Host>(("host" + std::to_string(h)).c_str(), *this,
                                            blocks.chips[h], devices_per_chip, chips, options));
    for (int c : blocks.chips[h])
      for (int k = 0; k < devices_per_chip; ++k)
        host_of_core_[c * devices_per_chip + k] = static_cast<int>(h);
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

void HostSet::preprocessed(int batch, Duration cpu) {
  stats_[batch].cpu = max(stats_[batch].cpu, cpu);
}

void HostSet::arrived(int core, int batch, Duration when) {
  arrival_[core][batch] = when;
  stats_[batch].arrived = max(stats_[batch].arrived, when);
  queue_.at(when, *this, 0, static_cast<std::uint64_t>(core));
}

void HostSet::on_event(std::uint32_t, std::uint64_t arg) { wake_(static_cast<int>(arg)); }

Host::Host(sc_core::sc_module_name name, HostSet& set, const std::vector<int>& chips,
           int devices_per_chip, int total_chips, const HostOptions& options)
    : sc_core::sc_module(name),
      set_(set),
      chips_(chips),
      devices_per_chip_(devices_per_chip),
      cores_(static_cast<int>(chips.size()) * devices_per_chip),
      share_(static_cast<double>(chips.size()) / total_chips),
      options_(options),
      taken_(set.plan_.batch_examples.size(), 0),
      pcie_free_(chips.size(), Duration{}),
      // A batch is one copy per chip, so a host never uses more threads than it has chips: the
      // threads past that stay idle, and are not kept (hardware.host.infeed_threads up to 2^20
      // on 512 hosts was 4 GB of them).
      thread_free_(std::min(static_cast<std::size_t>(options.infeed_threads), chips.size()),
                   Duration{}) {
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
    // Batch next_ is preprocessed: copy each chip's share over its PCIe link (FIFO per link),
    // each copy on the infeed thread that is free first.
    busy_ = false;
    const int chips = static_cast<int>(chips_.size());
    const Duration copy =
        options_.pcie_per_chip.time_for(examples / chips * plan.batch_example_bytes[next_]);
    for (int c = 0; c < chips; ++c) {
      Duration& thread = *std::min_element(thread_free_.begin(), thread_free_.end());
      pcie_free_[c] = max(max(pcie_free_[c], now), thread) + copy;
      thread = pcie_free_[c];
      for (int k = 0; k < devices_per_chip_; ++k)
        set_.arrived(chips_[c] * devices_per_chip_ + k, next_, pcie_free_[c]);
    }
    ++next_;
  }
  if (next_ >= batches) return;
  // The queue slot of batch next_ is the one batch next_ - queue_batches used.
  const int freed = next_ - options_.queue_batches;
  if (freed >= 0 && taken_[freed] < cores_) return;  // woken again by dequeued()
  busy_ = true;
  // The pipeline runs its examples in parallel over the host's CPU cores.
  const double n = plan.batch_examples[next_] * share_;
  const Duration preprocess =
      Duration::seconds(n * plan.batch_cpu_ns_per_example[next_] * 1e-9 / options_.cpu_cores);
  set_.preprocessed(next_, preprocess);
  done_at_ = now + preprocess;
  wake_.notify(to_sc(preprocess));
}

}  // namespace tpusim
