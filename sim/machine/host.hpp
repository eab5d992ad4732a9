#pragma once
// Hosts and infeed: one Host module per block of chips (hardware.host.chip_block: 4x2 on TPU v3,
// topologies/host_blocks.hpp) preprocesses the examples of its chips on its CPU cores
// (hardware.host.cpu_cores: a batch takes its examples x the pipeline's CPU time per example /
// cores) and copies each core's share of a batch over its chip's PCIe link into the core's
// infeed queue, each copy on one of hardware.host.infeed_threads threads. A queue holds
// host.infeed_queue_batches batches (2: double-buffered); the host starts on batch b only when
// every one of its cores has dequeued batch b - queue_batches. A core dequeues batch b at the
// Program's infeed op of that batch and waits there until the batch has arrived: a host slower than
// the device stalls the step.
#include <cstdint>
#include <functional>
#include <memory>
#include <systemc>
#include <vector>

#include "core/config.hpp"
#include "core/units.hpp"
#include "sim/core/core_ports.hpp"
#include "sim/kernel/event_queue.hpp"
#include "topologies/host_blocks.hpp"

namespace tpusim {

/// What the hosts feed, in the order the cores dequeue it. Filled by the caller (tools).
struct InfeedPlan {
  std::vector<int> op_batch;                ///< per Program op: the batch it dequeues, or -1
  std::vector<double> batch_examples;       ///< per batch: examples over all hosts
  std::vector<double> batch_example_bytes;  ///< per batch: infeed bytes of one of its examples
  /// per batch: CPU time of one example's preprocessing on one host core, ns
  /// (models/input_pipeline.hpp)
  std::vector<double> batch_cpu_ns_per_example;
};

/// The hosts' parameters hardware.host.* (declared in sim/machine/host.cpp).
struct HostOptions {
  std::vector<int> chip_block{4, 2};  ///< chips per host along each grid dimension
  int cpu_cores = 96;                 ///< CPU cores of a host that run its input pipeline
  Bandwidth pcie_per_chip = Bandwidth::GBps(15);
  int queue_batches = 2;
  int infeed_threads = 8;  ///< copies to chips run on this many threads at once
  /// A batch's copies to `chips` chips started on idle threads: ceil(chips / infeed_threads)
  /// of them run one after another on a thread (Host takes the thread free first).
  int copy_rounds(int chips) const { return (chips + infeed_threads - 1) / infeed_threads; }
  static HostOptions from_config(const Config& cfg);
};

struct InfeedBatchStats {
  Duration arrived;  ///< the last core's copy of the batch arrived
  Duration started;  ///< the last core dequeued it (its step began)
  Duration stall;    ///< longest wait of a core at the batch's infeed op
  Duration cpu;      ///< longest preprocessing of the batch on a host's CPU cores
};

class Host;

/// All hosts of the machine.
class HostSet : public InfeedPort, private EventTarget {
 public:
  /// `wake(core)` is called when a batch arrives in the queue of a core.
  /// Throws ConfigError (hardware.host.chip_block) if the blocks do not tile the topology.
  HostSet(const Topology& topology, int devices_per_chip, const HostOptions& options,
          const InfeedPlan& plan, EventQueue& queue, std::function<void(int)> wake);
  ~HostSet() override;

  bool available(int core, int batch, Duration now) override;
  void dequeue(int core, int batch, Duration now) override;

  int num_hosts() const { return static_cast<int>(hosts_.size()); }
  const std::vector<InfeedBatchStats>& stats() const { return stats_; }

 private:
  friend class Host;
  void arrived(int core, int batch, Duration when);
  /// The one event kind: a batch has arrived in the queue of core `arg`.
  void on_event(std::uint32_t kind, std::uint64_t arg) override;
  void preprocessed(int batch, Duration cpu);

  const InfeedPlan& plan_;
  EventQueue& queue_;
  std::function<void(int)> wake_;
  std::vector<std::unique_ptr<Host>> hosts_;
  std::vector<int> host_of_core_;
  std::vector<std::vector<Duration>> arrival_;  ///< [core][batch]; negative: not yet
  std::vector<Duration> waiting_since_;         ///< per core, for its current batch
  std::vector<bool> waiting_;
  std::vector<InfeedBatchStats> stats_;
};

/// One host: an SC_METHOD that preprocesses one batch at a time and then copies it to its chips.
class Host : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Host);
  /// Feeds the cores of `chips` (ids in the topology) over one PCIe link per chip.
  Host(sc_core::sc_module_name name, HostSet& set, const std::vector<int>& chips,
       int devices_per_chip, int total_chips, const HostOptions& options);

  /// One of this host's cores dequeued batch `batch`.
  void dequeued(int batch);

 private:
  void guarded_work();
  void work();

  HostSet& set_;
  const std::vector<int> chips_;
  const int devices_per_chip_, cores_;
  const double share_;  ///< this host's chips over all chips: its share of every batch
  const HostOptions options_;
  sc_core::sc_event wake_;
  int next_ = 0;                       ///< next batch to preprocess
  bool busy_ = false;                  ///< preprocessing batch next_
  Duration done_at_;                   ///< when batch next_ is preprocessed
  std::vector<int> taken_;             ///< per batch: how many of this host's cores dequeued it
  std::vector<Duration> pcie_free_;    ///< per chip: when its PCIe link is next free
  std::vector<Duration> thread_free_;  ///< per infeed thread: when it is next free
};

}  // namespace tpusim
