#pragma once
// One simulation: elaborate the machine (its chips with their TensorCores and links), play the
// Program, report.
// SystemC elaborates one design per process, so call simulate() once per process.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "models/program.hpp"
#include "sim/collectives/collective_engine.hpp"
#include "sim/core/core_resources.hpp"
#include "sim/machine/dcn.hpp"
#include "sim/machine/host.hpp"
#include "sim/network/network.hpp"
#include "topologies/topology.hpp"

namespace tpusim {

class TimelineSink;

struct SimOptions {
  NetworkOptions network;
  CollectiveOptions collectives;
  bool use_measured_durations = true;  ///< ops with a measured duration use it, else the model
  TimelineSink* timeline = nullptr;
  std::vector<int> traced_cores;  ///< cores whose spans go to the timeline
  bool link_stats = false;        ///< fill SimReport::link_stats (every link of the machine)
  /// Hosts feed the Program's infeed ops (tpusim train); null: no infeed, as for one step.
  const InfeedPlan* infeed = nullptr;
  HostOptions hosts;
  /// A progress line on stderr every this many wall seconds while the run lasts (0: none). The
  /// commands set it when stderr is a terminal (sim/run/run_progress.hpp).
  double progress_interval_s = 0;
  /// sim.symmetry: simulate one core per class of a translation symmetry where the machine
  /// and the program have one (sim/collectives/symmetry.hpp); false: every core.
  bool symmetry = true;
  /// Multislice (topology.slices > 1): the data-center network.
  DcnOptions dcn;
  /// Makes each core's memory model, plugged into its DMA engines' TLM-2.0 socket
  /// (sim/core/memory.hpp, docs/systemc.md); empty: the built-in HBM port.
  MemoryFactory memory_model;
  /// Likewise each core's CMEM on a chip with CMEM (hardware.cmem.MiB_per_chip); empty: the
  /// built-in, which takes no time of its own.
  MemoryFactory cmem_model;
  /// Likewise each core's vector memory (VMEM), where the HBM accesses of compute ops land; empty:
  /// the built-in, which takes no time of its own (the cost model gives VMEM none).
  MemoryFactory vmem_model;
  /// The DMA engines reach the built-in HBM, VMEM, CMEM and ICI port directly, as TLM's direct
  /// memory interface would (the same answers, no transaction); false: every access and transfer is
  /// a b_transport through the sockets. A plugged-in model sees every transaction either way.
  bool direct_access = true;
  bool stats = false;  ///< fill SimReport::stats (every module's statistics, tpusim run --stats)
  static SimOptions from_config(const Config& cfg);  ///< network, collectives, hosts, symmetry
};

struct OpTime {
  int index = 0;
  std::string name;
  std::string kind;
  double time_ms = 0;  ///< per core per step
  /// How long a core waited, with nothing to run, for the op's inputs (a collective, an infeed
  /// batch) before it could start; the longest over the cores.
  double waiting_ms = 0;
};

struct LinkUsage {
  double busiest_utilization = 0;  ///< busy time / step time of the busiest link
  double mean_utilization = 0;     ///< over all links
  std::string busiest_link;
  double total_bytes = 0;
};

/// One direction of one link over the whole run.
struct LinkStat {
  std::string
      name;  ///< its module name, e.g. multipod.chip(5,0).ici.x+, multipod.chip(0,0).onchip.0to1
  double bandwidth_GBps = 0;
  double bytes = 0;
  Duration busy;  ///< time spent serialising bytes
  std::uint64_t transfers = 0;
};

/// Multislice: what crossed the data-center network.
struct DcnUsage {
  double bytes_per_chip = 0;       ///< sent by each chip over its host's interfaces
  double busiest_utilization = 0;  ///< busy time / step time of the busiest DCN link
  std::string busiest_link;
};

/// The statistics of every module, read by walking the module tree after the run
/// (sim/kernel/stats.hpp), and the machine's links.
struct SimStats {
  std::vector<std::pair<std::string, double>> values;  ///< name as the tree, value; tree order
  /// Per kind of statistic (hbm.bytes_read): its unit and meaning.
  std::map<std::string, std::pair<std::string, std::string>> descriptions;
};

struct SimReport {
  int chips = 0;                   ///< of every slice
  int cores = 0;                   ///< of every slice
  int slices = 1;                  ///< topology.slices; one is simulated, the others are its images
  Duration step_time;              ///< until the last core finished
  Duration compute;                ///< computing, on the core that finished last
  Duration communication;          ///< at least one collective in flight, same core
  Duration exposed_communication;  ///< waiting on collectives and not computing, same core
  /// Compute time lost to collective steps holding that core's HBM port or vector unit (part of
  /// `compute`); zero unless collectives overlap compute (hardware.async_collectives).
  Duration compute_slowdown;
  CommSplit comm_split;  ///< that core's time inside collectives, by cause
  /// That core's resources over the run: busy time of its MXUs, vector unit and HBM port (every
  /// grant, compute and collectives), and its DMA engines' streams.
  struct Occupancy {
    Duration mxu, vpu, hbm;
    Duration dma;          ///< engine time: each stream from issue until its data is through
    Duration dma_waiting;  ///< steps waiting for a free engine (hardware.dma.engines_per_core)
    std::uint64_t dma_streams = 0;
    int dma_peak_in_flight = 0;
  } occupancy;
  double useful_flops_per_core = 0;
  double mxu_utilization = 0;
  std::vector<OpTime> top_ops;  ///< compute ops and collectives, longest first
  std::map<int, CollectiveOpStats> collectives;
  LinkUsage links;                   ///< the ICI and on-chip links of one slice
  DcnUsage dcn;                      ///< multislice only
  std::vector<LinkStat> link_stats;  ///< every link, if SimOptions::link_stats
  std::uint64_t kernel_events = 0;   ///< SC_METHOD activations (cores and event queue)
  /// SystemC objects elaborated (modules, processes, ports, exports, sockets' parts): what a
  /// symmetric run saves by elaborating its domain only.
  std::uint64_t systemc_objects = 0;
  SimStats stats;                  ///< if SimOptions::stats
  std::uint64_t network_work = 0;  ///< link reservations or packet-hops
  double wall_s = 0;
  double elaboration_s = 0;
  int hosts = 0;
  std::vector<InfeedBatchStats> infeed;  ///< per infeed batch, when SimOptions::infeed is set
  /// Which simulation ran: "symmetric: 2 of 8192 cores simulated (...)" or "full: why not".
  std::string symmetry;
};

/// Plays `program` on the machine. Throws StuckError naming what waits on what if the program
/// can never finish, ConfigError for a mesh or algorithm that does not fit.
SimReport simulate(const Program& program, const Topology& topology, const HardwareSpec& hw,
                   const SimOptions& options);

/// Per-op compute times of a program on `hw` (measured durations if chosen and present).
std::vector<Duration> compute_times(const Program& program, const HardwareSpec& hw,
                                    bool use_measured);

}  // namespace tpusim
