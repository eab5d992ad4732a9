#pragma once
// The chip, core and link parameters of a study, converted once into typed values.
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/param_handle.hpp"
#include "core/units.hpp"

namespace tpusim {

struct MxuSpec {
  int count = 2;                 ///< MXUs per TensorCore
  int dim = 128;                 ///< systolic array is dim x dim
  int rows_per_pass = 8;         ///< LHS rows streamed per pass
  int pass_cycles = 8;           ///< cycles per pass
  int weight_load_cycles = 128;  ///< cycles to load one weight tile (overlaps the previous tile)
  int fill_drain_cycles = 256;   ///< pipeline fill plus drain, once per matmul
  double int8_rate = 0;          ///< int8 products per cycle over bf16's; 0: no int8 figure
  double fp8_rate = 0;           ///< fp8 products per cycle over bf16's; 0: no fp8 figure
};

/// Hardware parameters other layers read directly (hardware.cpp declares them): the chip's name,
/// the systolic array's side, the TensorCores per chip, megacore.
extern const Param<std::string> kHwName;
extern const Param<std::int64_t> kHwMxuDim;
extern const Param<std::int64_t> kHwCoresPerChip;
extern const Param<bool> kHwMegacore;
/// The host's links (hardware.cpp declares them; sim/machine and tools/serve read them): its
/// data-center network interfaces (dcn.*) and its PCIe link per chip.
extern const Param<std::int64_t> kDcnHostNics;
extern const Param<double> kDcnNicBandwidthGBps;
extern const Param<double> kDcnBisectionBandwidthGBps;
extern const Param<double> kDcnLatencyUs;
extern const Param<double> kHardwareHostPcieGBps;

struct HardwareSpec {
  std::string name;
  /// Devices per chip: what runs one SPMD program instance. The chip's TensorCores, or 1 when
  /// they run joined as one megacore device (`megacore`). Layouts, the partitioner, memory,
  /// collectives and the simulated cores count devices; the per-core figures below (MXUs, vector
  /// unit, HBM, VMEM) are one device's.
  int devices_per_chip = 2;
  int tensorcores_per_chip = 2;  ///< physical TensorCores per chip (hardware.cores_per_chip)
  bool megacore = false;         ///< the chip's TensorCores run as one device
  double clock_hz = 940e6;
  MxuSpec mxu;
  int vpu_lanes = 128;
  int vpu_sublanes = 8;
  double hbm_bytes_per_core = 0;
  Bandwidth hbm_bandwidth_per_core;
  Duration hbm_latency;
  Bandwidth onchip_bandwidth;  ///< between the two cores of a chip, one direction
  Duration onchip_latency;
  Bandwidth ici_bandwidth;         ///< one direction of one ICI link
  Duration ici_latency;            ///< per hop
  int dma_engines_per_core = 0;    ///< collective streams a core carries at once; 0: no limit
  bool async_collectives = false;  ///< a core computes while its collectives are in flight
  std::vector<int> slow_chips;     ///< chips whose compute is slower (a what-if of a bad chip)
  double slow_chip_factor = 1;     ///< their compute time multiplier
  // Calibration: few, physical, shared by every model (see configs/tpu_v3.json for sources).
  Duration op_overhead;               ///< fixed cost of launching one compute op
  double hbm_efficiency = 1;          ///< achievable fraction of peak HBM bandwidth
  double mxu_efficiency = 1;          ///< achieved fraction of the MXU cycle formula's throughput
  Duration collective_step_overhead;  ///< synchronisation cost of one collective step
  Duration collective_launch;         ///< fixed cost of starting one collective op
  Duration loop_iteration;            ///< fixed cost of one device-loop iteration (its infeed op)
  /// Most operand bytes a matmul loads before its first tile computes, and most result bytes it
  /// stores after its last (its pipeline's first and last block, not overlapped); 0: none.
  double exposed_block_bytes = 0;
  // On-chip memories the compiler (compiler/) places tensors in.
  double vmem_bytes_per_core = 0;  ///< vector memory of a TensorCore (bounds a fusion's tiles)
  double cmem_bytes_per_chip = 0;  ///< common memory of a chip (TPU v4); 0: none

  static HardwareSpec from_config(const Config& cfg);
  /// A core's share of its chip's CMEM (compiler/cmem_placement.hpp places at most this much).
  double cmem_bytes_per_core() const { return cmem_bytes_per_chip / devices_per_chip; }
  double peak_flops_per_core() const { return 2.0 * mxu.dim * mxu.dim * mxu.count * clock_hz; }
  Duration cycles(double n) const { return Duration::cycles(n, clock_hz); }
};

}  // namespace tpusim
