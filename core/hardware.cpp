#include "core/hardware.hpp"

#include <algorithm>
#include <string>

#include "core/errors.hpp"
#include "core/params.hpp"

namespace tpusim {
namespace {
using T = ParamType;
// Defaults are TPU v3 (see configs/tpu_v3.json for the source of each number).
// One parameter per line reads as a table.
// clang-format off
const ParamRegistrar kHardwareParams{{
    label_param("hardware.name", "tpu_v3", "name of the chip generation, for reports"),
    {"hardware.cores_per_chip", T::Integer, "", 2, "TensorCores per chip (each its own device unless hardware.megacore)", 1, 8},
    {"hardware.megacore", T::Boolean, "", false, "the chip's TensorCores run as one device (megacore: one program, one replica per chip, all its cores' MXUs and vector units, the chip's HBM and vector memory; no on-chip link), as on TPU v4 and v5p; false: one device per TensorCore (TPU v3). No effect on a chip of one core"},
    {"hardware.clock_MHz", T::Number, "MHz", 940.0, "TensorCore clock", 1, 1e5},
    {"hardware.mxu.count", T::Integer, "", 2, "MXUs (systolic arrays) per TensorCore", 1, 64},
    {"hardware.mxu.dim", T::Integer, "", 128, "side of the square systolic array", 8, 1024},
    {"hardware.mxu.rows_per_pass", T::Integer, "", 8, "LHS rows streamed through the array per pass", 1, 1024},
    {"hardware.mxu.pass_cycles", T::Integer, "cycles", 8, "cycles per pass", 1, 1024},
    {"hardware.mxu.weight_load_cycles", T::Integer, "cycles", 128, "cycles to load one weight tile; hidden behind the previous tile's passes when those take longer", 0, 1e5},
    {"hardware.mxu.fill_drain_cycles", T::Integer, "cycles", 256, "pipeline fill plus drain, paid once per matmul", 0, 1e6},
    {"hardware.vpu.lanes", T::Integer, "", 128, "vector unit lanes", 1, 4096},
    {"hardware.vpu.sublanes", T::Integer, "", 8, "vector unit sublanes (elements per lane per cycle)", 1, 1024},
    {"hardware.hbm.GiB_per_core", T::Number, "GiB", 16.0, "HBM capacity per TensorCore; a program whose peak memory exceeds it does not run (docs/memory.md)", 0.001, 1e6},
    {"hardware.hbm.bandwidth_GBps_per_core", T::Number, "GB/s", 450.0, "peak HBM bandwidth per TensorCore", 0.001, 1e6},
    {"hardware.hbm.latency_ns", T::Number, "ns", 500.0, "latency of one HBM transaction", 0, 1e9},
    {"hardware.onchip.bandwidth_GBps", T::Number, "GB/s", 300.0, "path between the cores of a chip, one direction", 0.001, 1e6},
    {"hardware.onchip.latency_ns", T::Number, "ns", 200.0, "latency of the on-chip path", 0, 1e9},
    {"hardware.ici.bandwidth_GBps", T::Number, "GB/s", 100.0, "one direction of one ICI link", 0.001, 1e6},
    {"hardware.ici.latency_ns", T::Number, "ns", 200.0, "ICI latency per hop", 0, 1e9},
    {"hardware.dma.engines_per_core", T::Integer, "", 0, "DMA engines of a TensorCore: collective streams (a step's send to one neighbour) it carries at once; a step whose streams find too few free waits. 0: no limit (no public TPU v3 figure)", 0, 1024},
    {"hardware.async_collectives", T::Boolean, "", false, "a TensorCore keeps computing while its collectives are in flight (false: it drives each collective itself and waits for it, as XLA ran them on TPU v3)"},
    {"hardware.slow_chips", T::IntegerList, "chip ids", nlohmann::json::array(), "chips whose compute ops take slow_chip_factor times longer (a per-chip difference applied at execution time)", 0, 1e6},
    {"hardware.slow_chip_factor", T::Number, "", 1.0, "compute time multiplier of the slow chips", 1, 1000},
    {"hardware.calibration.op_overhead_ns", T::Number, "ns", 1000.0, "fixed cost of launching one compute op", 0, 1e9},
    {"hardware.calibration.mxu_efficiency", T::Number, "", 0.62, "achieved fraction of the MXU cycle formula's throughput (stalls between tiles, result handling the formula leaves out)", 0.01, 1},
    {"hardware.calibration.hbm_efficiency", T::Number, "", 0.85, "achievable fraction of peak HBM bandwidth", 0.01, 1},
    {"hardware.calibration.collective_step_overhead_ns", T::Number, "ns", 100.0, "synchronisation cost of one step of a collective (DMA set-up, flags)", 0, 1e9},
    {"hardware.calibration.collective_launch_ns", T::Number, "ns", 1000.0, "fixed cost of starting one collective op, whatever its size (assumed: as an XLA op launch, about 1 us; no public figure)", 0, 1e9},
    {"hardware.calibration.loop_iteration_ns", T::Number, "ns", 1000.0, "fixed cost of one device-loop iteration, paid by its infeed op: the while loop's condition and the infeed dequeue on the core's scalar unit (assumed: as an op launch, about 1 us; no public figure)", 0, 1e9},
    {"hardware.vmem.MiB_per_core", T::Number, "MiB", 16.0, "vector memory of a TensorCore: bounds the tiles a fusion keeps on chip (about 32 MiB per TPU v3 chip, a third-party figure)", 0.001, 1e6},
    {"hardware.cmem.MiB_per_chip", T::Number, "MiB", 0.0, "common memory of a chip that XLA places buffers in instead of HBM (TPU v4: 128 MiB, ISCA 2023; TPU v3: none)", 0, 1e6},
}};
// clang-format on

/// Megacore: one device per chip holding all its cores' MXUs, vector units, HBM and vector memory
/// (ISCA 2023 TPU v4 paper, Cloud TPU docs). With one device per chip no on-chip link is used.
void join_cores(HardwareSpec& h) {
  const int n = h.tensorcores_per_chip;
  h.devices_per_chip = 1;
  h.mxu.count *= n;
  h.vpu_sublanes *= n;
  h.hbm_bytes_per_core *= n;
  h.hbm_bandwidth_per_core = h.hbm_bandwidth_per_core * n;
  h.vmem_bytes_per_core *= n;
}
}  // namespace

HardwareSpec HardwareSpec::from_config(const Config& c) {
  HardwareSpec h;
  h.name = c.string("hardware.name");
  h.tensorcores_per_chip = static_cast<int>(c.integer("hardware.cores_per_chip"));
  h.megacore = c.boolean("hardware.megacore");
  h.devices_per_chip = h.tensorcores_per_chip;
  h.clock_hz = c.number("hardware.clock_MHz") * 1e6;
  h.mxu.count = static_cast<int>(c.integer("hardware.mxu.count"));
  h.mxu.dim = static_cast<int>(c.integer("hardware.mxu.dim"));
  h.mxu.rows_per_pass = static_cast<int>(c.integer("hardware.mxu.rows_per_pass"));
  h.mxu.pass_cycles = static_cast<int>(c.integer("hardware.mxu.pass_cycles"));
  h.mxu.weight_load_cycles = static_cast<int>(c.integer("hardware.mxu.weight_load_cycles"));
  h.mxu.fill_drain_cycles = static_cast<int>(c.integer("hardware.mxu.fill_drain_cycles"));
  h.vpu_lanes = static_cast<int>(c.integer("hardware.vpu.lanes"));
  h.vpu_sublanes = static_cast<int>(c.integer("hardware.vpu.sublanes"));
  h.hbm_bytes_per_core = c.number("hardware.hbm.GiB_per_core") * 1073741824.0;
  h.hbm_bandwidth_per_core = c.GBps("hardware.hbm.bandwidth_GBps_per_core");
  h.hbm_latency = c.ns("hardware.hbm.latency_ns");
  h.onchip_bandwidth = c.GBps("hardware.onchip.bandwidth_GBps");
  h.onchip_latency = c.ns("hardware.onchip.latency_ns");
  h.ici_bandwidth = c.GBps("hardware.ici.bandwidth_GBps");
  h.ici_latency = c.ns("hardware.ici.latency_ns");
  h.dma_engines_per_core = static_cast<int>(c.integer("hardware.dma.engines_per_core"));
  h.async_collectives = c.boolean("hardware.async_collectives");
  for (auto chip : c.integers("hardware.slow_chips")) {
    if (std::find(h.slow_chips.begin(), h.slow_chips.end(), chip) != h.slow_chips.end())
      throw ConfigError("hardware.slow_chips", "chip " + std::to_string(chip) +
                                                   " is given twice; allowed: each chip once");
    h.slow_chips.push_back(static_cast<int>(chip));
  }
  h.slow_chip_factor = c.number("hardware.slow_chip_factor");
  h.op_overhead = c.ns("hardware.calibration.op_overhead_ns");
  h.hbm_efficiency = c.number("hardware.calibration.hbm_efficiency");
  h.mxu_efficiency = c.number("hardware.calibration.mxu_efficiency");
  h.collective_step_overhead = c.ns("hardware.calibration.collective_step_overhead_ns");
  h.collective_launch = c.ns("hardware.calibration.collective_launch_ns");
  h.loop_iteration = c.ns("hardware.calibration.loop_iteration_ns");
  h.vmem_bytes_per_core = c.number("hardware.vmem.MiB_per_core") * 1048576.0;
  h.cmem_bytes_per_chip = c.number("hardware.cmem.MiB_per_chip") * 1048576.0;
  // A systolic array takes at most one LHS row per cycle: its peak (peak_flops_per_core, what
  // hardware FLOPs utilisation is measured against) is dim x dim multiply-adds a cycle. More rows
  // than cycles per pass would time matmuls faster than that peak (a utilisation past 100 %, a
  // model FLOPs utilisation above the hardware's).
  if (h.mxu.rows_per_pass > h.mxu.pass_cycles)
    throw ConfigError("hardware.mxu.rows_per_pass",
                      std::to_string(h.mxu.rows_per_pass) + " rows in " +
                          std::to_string(h.mxu.pass_cycles) +
                          " cycles (hardware.mxu.pass_cycles) is more than one row a cycle, faster "
                          "than the array's peak; allowed: at most hardware.mxu.pass_cycles (" +
                          std::to_string(h.mxu.pass_cycles) + ")");
  if (h.megacore) join_cores(h);
  return h;
}

}  // namespace tpusim
