#include "core/hardware.hpp"

#include <algorithm>
#include <string>

#include "core/errors.hpp"
#include "core/mxu_rates.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"

namespace tpusim {
namespace {
using T = ParamType;
}  // namespace

// Defaults are TPU v3 (see configs/tpu_v3.json for the source of each number).
// One parameter per line reads as a table.
// clang-format off
const Param<std::string> kHwName{label_param("hardware.name", "tpu_v3", "name of the chip generation, for reports")};
const Param<std::int64_t> kHwCoresPerChip{{"hardware.cores_per_chip", T::Integer, "", 2, "TensorCores per chip (each its own device unless hardware.megacore)", 1, 8}};
const Param<bool> kHwMegacore{{"hardware.megacore", T::Boolean, "", false, "the chip's TensorCores run as one device (megacore: one program, one replica per chip, all its cores' MXUs and vector units, the chip's HBM and vector memory; no on-chip link), as on TPU v4 and v5p; false: one device per TensorCore (TPU v3). No effect on a chip of one core"}};
const Param<double> kHwClockMHz{{"hardware.clock_MHz", T::Number, "MHz", 940.0, "TensorCore clock", 1, 1e5}};
const Param<std::int64_t> kHwMxuCount{{"hardware.mxu.count", T::Integer, "", 2, "MXUs (systolic arrays) per TensorCore", 1, 64}};
const Param<std::int64_t> kHwMxuDim{{"hardware.mxu.dim", T::Integer, "", 128, "side of the square systolic array", 8, 1024}};
const Param<std::int64_t> kHwMxuRowsPerPass{{"hardware.mxu.rows_per_pass", T::Integer, "", 8, "LHS rows streamed through the array per pass", 1, 1024}};
const Param<std::int64_t> kHwMxuPassCycles{{"hardware.mxu.pass_cycles", T::Integer, "cycles", 8, "cycles per pass", 1, 1024}};
const Param<std::int64_t> kHwMxuWeightLoadCycles{{"hardware.mxu.weight_load_cycles", T::Integer, "cycles", 128, "cycles to load one weight tile; hidden behind the previous tile's passes when those take longer", 0, 1e5}};
const Param<std::int64_t> kHwMxuFillDrainCycles{{"hardware.mxu.fill_drain_cycles", T::Integer, "cycles", 256, "pipeline fill plus drain, paid once per matmul", 0, 1e6}};
const Param<double> kHwMxuInt8Rate{{"hardware.mxu.int8_rate", T::Number, "", 0.0, "int8 matmul rate of the MXUs over their bf16 rate (2: twice the products per cycle); 0: the chip has no published int8 rate, and an int8 kernel is refused", 0, 16}};
const Param<double> kHwMxuFp8Rate{{"hardware.mxu.fp8_rate", T::Number, "", 0.0, "fp8 matmul rate of the MXUs over their bf16 rate; 0: the chip has no published fp8 rate, and an fp8 kernel is refused", 0, 16}};
const Param<std::int64_t> kHwVpuLanes{{"hardware.vpu.lanes", T::Integer, "", 128, "vector unit lanes", 1, 4096}};
const Param<std::int64_t> kHwVpuSublanes{{"hardware.vpu.sublanes", T::Integer, "", 8, "vector unit sublanes (elements per lane per cycle)", 1, 1024}};
const Param<double> kHwHbmGiBPerCore{{"hardware.hbm.GiB_per_core", T::Number, "GiB", 16.0, "HBM capacity per TensorCore; a program whose peak memory exceeds it does not run (docs/memory.md)", 0.001, 1e6}};
const Param<double> kHwHbmBandwidthGBpsPerCore{{"hardware.hbm.bandwidth_GBps_per_core", T::Number, "GB/s", 450.0, "peak HBM bandwidth per TensorCore", 0.001, 1e6}};
const Param<double> kHwHbmLatencyNs{{"hardware.hbm.latency_ns", T::Number, "ns", 500.0, "latency of one HBM transaction", 0, 1e9}};
const Param<double> kHwOnchipBandwidthGBps{{"hardware.onchip.bandwidth_GBps", T::Number, "GB/s", 300.0, "path between the cores of a chip, one direction", 0.001, 1e6}};
const Param<double> kHwOnchipLatencyNs{{"hardware.onchip.latency_ns", T::Number, "ns", 200.0, "latency of the on-chip path", 0, 1e9}};
const Param<double> kHwIciBandwidthGBps{{"hardware.ici.bandwidth_GBps", T::Number, "GB/s", 100.0, "one direction of one ICI link", 0.001, 1e6}};
const Param<double> kHwIciLatencyNs{{"hardware.ici.latency_ns", T::Number, "ns", 200.0, "ICI latency per hop", 0, 1e9}};
const Param<std::int64_t> kHwDmaEnginesPerCore{{"hardware.dma.engines_per_core", T::Integer, "", 0, "DMA engines of a TensorCore: collective streams (a step's send to one neighbour) it carries at once; a step whose streams find too few free waits. 0: no limit (no public TPU v3 figure)", 0, 1024}};
const Param<bool> kHwAsyncCollectives{{"hardware.async_collectives", T::Boolean, "", false, "a TensorCore keeps computing while its collectives are in flight (false: it drives each collective itself and waits for it, as XLA ran them on TPU v3)"}};
const Param<std::vector<std::int64_t>> kHwSlowChips{{"hardware.slow_chips", T::IntegerList, "chip ids", nlohmann::json::array(), "chips whose compute ops take slow_chip_factor times longer (a per-chip difference applied at execution time)", 0, 1e6}};
const Param<double> kHwSlowChipFactor{{"hardware.slow_chip_factor", T::Number, "", 1.0, "compute time multiplier of the slow chips", 1, 1000}};
const Param<double> kHwCalibrationOpOverheadNs{{"hardware.calibration.op_overhead_ns", T::Number, "ns", 1000.0, "fixed cost of launching one compute op", 0, 1e9}};
const Param<double> kHwCalibrationMxuEfficiency{{"hardware.calibration.mxu_efficiency", T::Number, "", 0.62, "achieved fraction of the MXU cycle formula's throughput (stalls between tiles, result handling the formula leaves out)", 0.01, 1}};
const Param<double> kHwCalibrationHbmEfficiency{{"hardware.calibration.hbm_efficiency", T::Number, "", 0.85, "achievable fraction of peak HBM bandwidth", 0.01, 1}};
const Param<double> kHwCalibrationExposedBlockMiB{{"hardware.calibration.exposed_block_MiB", T::Number, "MiB", 0.0, "most operand bytes a matmul loads before its first tile computes, and most result bytes it stores after its last: its pipeline's first and last block, which do not overlap its compute (set by the TPU v7 GEMM points 1024 to 4096, docs/kernels.md); 0: all of its HBM traffic overlaps", 0, 1e6}};
const Param<double> kHwCalibrationIciEfficiency{{"hardware.calibration.ici_efficiency", T::Number, "", 1.0, "achievable fraction of an ICI link's bandwidth in a collective's streams (flow control, DMA gaps): every network level and cost model sees the link at this fraction of hardware.ici.bandwidth_GBps (set by a chip's large measured all-gathers, docs/kernels.md; TPU v3: 1, its link rate is the raw one its calibration was set with)", 0.01, 1}};
const Param<double> kHwCalibrationCollectiveStepOverheadNs{{"hardware.calibration.collective_step_overhead_ns", T::Number, "ns", 100.0, "synchronisation cost of one step of a collective (DMA set-up, flags)", 0, 1e9}};
const Param<double> kHwCalibrationCollectiveLaunchNs{{"hardware.calibration.collective_launch_ns", T::Number, "ns", 1000.0, "fixed cost of starting one collective op, whatever its size (assumed: as an XLA op launch, about 1 us; no public figure)", 0, 1e9}};
const Param<double> kHwCalibrationLoopIterationNs{{"hardware.calibration.loop_iteration_ns", T::Number, "ns", 1000.0, "fixed cost of one device-loop iteration, paid by its infeed op: the while loop's condition and the infeed dequeue on the core's scalar unit (assumed: as an op launch, about 1 us; no public figure)", 0, 1e9}};
const Param<double> kHwVmemMiBPerCore{{"hardware.vmem.MiB_per_core", T::Number, "MiB", 16.0, "vector memory of a TensorCore: bounds the tiles a fusion keeps on chip (about 32 MiB per TPU v3 chip, a third-party figure)", 0.001, 1e6}};
const Param<double> kHwCmemMiBPerChip{{"hardware.cmem.MiB_per_chip", T::Number, "MiB", 0.0, "common memory of a chip that XLA places buffers in instead of HBM (TPU v4: 128 MiB, ISCA 2023; TPU v3: none)", 0, 1e6}};
// The host's links, read by sim/machine/dcn.cpp, sim/machine/host.cpp and tools/serve: declared
// here so that every reader of a study, and every chip preset, may set them. The PCIe figure is
// about 15 GB/s per chip (the scaling book's TPU chapter); the presets set their generation's.
const Param<std::int64_t> kDcnHostNics{{"dcn.host_nics", T::Integer, "interfaces", 1, "multislice: data-center network interfaces of each host (one: an assumption for TPU v3 and v7, as a server of the era; the v4, v5p, v5e and v6e presets set their generation's per-chip figure: docs/reference.md)", 1, 64}};
const Param<double> kDcnNicBandwidthGBps{{"dcn.nic_bandwidth_GBps", T::Number, "GB/s", 12.5, "multislice: bandwidth of one host network interface, each way (assumption, docs/reference.md: 100 Gb/s Ethernet, the common data-center line rate of 2020-2022 servers; no published Cloud TPU host figure)", 1e-3, 1e6}};
const Param<double> kDcnBisectionBandwidthGBps{{"dcn.bisection_bandwidth_GBps", T::Number, "GB/s", 162500, "multislice: the switch fabric's bisection, both ways together, shared equally by the cross-slice flows (Jupiter's 1.3 Pb/s, Singh et al., SIGCOMM 2015: a whole data-center fabric, an upper bound for what a job gets)", 1e-3, 1e9}};
const Param<double> kDcnLatencyUs{{"dcn.latency_us", T::Number, "us", 10.0, "multislice: one-way latency of the data-center network, interface to interface (assumption, docs/reference.md: a few switch hops and the hosts' network stacks)", 0, 1e6}};
const Param<double> kHardwareHostPcieGBps{{"hardware.host.pcie_GBps", T::Number, "GB/s", 15.0, "host-to-chip PCIe bandwidth per chip: infeed (tpusim train) and the copies of the offloading remat policies (workload.remat *_offloaded)", 1e-6, 1e6}};
// clang-format on

namespace {
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
  h.name = kHwName(c);
  h.tensorcores_per_chip = static_cast<int>(kHwCoresPerChip(c));
  h.megacore = kHwMegacore(c);
  h.devices_per_chip = h.tensorcores_per_chip;
  h.clock_hz = kHwClockMHz(c) * 1e6;
  h.mxu.count = static_cast<int>(kHwMxuCount(c));
  h.mxu.dim = static_cast<int>(kHwMxuDim(c));
  h.mxu.rows_per_pass = static_cast<int>(kHwMxuRowsPerPass(c));
  h.mxu.pass_cycles = static_cast<int>(kHwMxuPassCycles(c));
  h.mxu.weight_load_cycles = static_cast<int>(kHwMxuWeightLoadCycles(c));
  h.mxu.fill_drain_cycles = static_cast<int>(kHwMxuFillDrainCycles(c));
  h.vpu_lanes = static_cast<int>(kHwVpuLanes(c));
  h.vpu_sublanes = static_cast<int>(kHwVpuSublanes(c));
  h.hbm_bytes_per_core = kHwHbmGiBPerCore(c) * 1073741824.0;
  h.hbm_bandwidth_per_core = Bandwidth::GBps(kHwHbmBandwidthGBpsPerCore(c));
  h.hbm_latency = Duration::ns(kHwHbmLatencyNs(c));
  h.onchip_bandwidth = Bandwidth::GBps(kHwOnchipBandwidthGBps(c));
  h.onchip_latency = Duration::ns(kHwOnchipLatencyNs(c));
  h.ici_bandwidth = Bandwidth::GBps(kHwIciBandwidthGBps(c)) * kHwCalibrationIciEfficiency(c);
  h.ici_latency = Duration::ns(kHwIciLatencyNs(c));
  h.dma_engines_per_core = static_cast<int>(kHwDmaEnginesPerCore(c));
  h.async_collectives = kHwAsyncCollectives(c);
  for (auto chip : kHwSlowChips(c)) {
    if (std::find(h.slow_chips.begin(), h.slow_chips.end(), chip) != h.slow_chips.end())
      throw ConfigError(kHwSlowChips.path(), "chip " + std::to_string(chip) +
                                                 " is given twice; allowed: each chip once");
    h.slow_chips.push_back(static_cast<int>(chip));
  }
  h.slow_chip_factor = kHwSlowChipFactor(c);
  h.op_overhead = Duration::ns(kHwCalibrationOpOverheadNs(c));
  h.hbm_efficiency = kHwCalibrationHbmEfficiency(c);
  h.mxu_efficiency = kHwCalibrationMxuEfficiency(c);
  h.collective_step_overhead = Duration::ns(kHwCalibrationCollectiveStepOverheadNs(c));
  h.collective_launch = Duration::ns(kHwCalibrationCollectiveLaunchNs(c));
  h.loop_iteration = Duration::ns(kHwCalibrationLoopIterationNs(c));
  h.exposed_block_bytes = kHwCalibrationExposedBlockMiB(c) * 1048576.0;
  h.mxu.int8_rate = kHwMxuInt8Rate(c);
  h.mxu.fp8_rate = kHwMxuFp8Rate(c);
  h.vmem_bytes_per_core = kHwVmemMiBPerCore(c) * 1048576.0;
  h.cmem_bytes_per_chip = kHwCmemMiBPerChip(c) * 1048576.0;
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
