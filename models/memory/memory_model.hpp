#pragma once
// The per-core memory of one training step, from the SPMD Program alone (no simulation).
//
// Every op's output (OpOutput: per-core bytes, dtype, class) lives from the op that produces it
// to its last reader along the program order; resident buffers (weights, optimizer slots,
// infeed) live through the whole step. The peak is the maximum over ops of resident + live
// bytes, at a named op. docs/memory.md lists the classes, their dtypes and their sources.
//
// API (stable; the layout planner calls it for many candidate layouts in one process):
//
//   Program program = compiled_program(cfg, topology, hw);   // compiler/compiler.hpp
//   MemoryProfile m = analyze_memory(program, hw.hbm_bytes_per_core);
//   m.peak_bytes, m.capacity_bytes, m.headroom_bytes(), m.fits(), m.peak_op_name,
//   m.bytes_by_class, m.classes_by_size(), m.largest
//
// A study's memory is that of its compiled Program (tiled layouts pad it, CMEM holds some of it),
// so the analysis takes a Program, never a config.
// live_bytes_per_op(program) gives the live bytes while each op runs (timeline counters).
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "models/program.hpp"
#include "topologies/topology.hpp"

namespace tpusim {

/// One buffer live at the peak.
struct LiveTensor {
  std::string name;  ///< the producing op's name, or the resident buffer's name
  MemoryClass cls = MemoryClass::Activations;
  DType dtype = DType::BF16;
  double bytes = 0;  ///< per core
};

struct MemoryProfile {
  bool known = false;  ///< false: the Program carries no sizes (read from a trace)
  double capacity_bytes = 0;
  double peak_bytes = 0;      ///< per core: resident + live outputs at the peak op
  double resident_bytes = 0;  ///< per core, live through the whole step
  int peak_op = -1;           ///< index of the op during which the peak happens (-1: no ops)
  std::string peak_op_name;
  std::array<double, kMemoryClasses> bytes_by_class{};  ///< at the peak, indexed by MemoryClass
  std::vector<LiveTensor> largest;  ///< largest buffers at the peak, largest first

  double headroom_bytes() const { return capacity_bytes - peak_bytes; }
  bool fits() const { return !known || peak_bytes <= capacity_bytes; }
  /// Classes holding bytes at the peak, largest first.
  std::vector<std::pair<MemoryClass, double>> classes_by_size() const;
};

/// Peak per-core memory of `program` against `capacity_bytes` (HardwareSpec::hbm_bytes_per_core),
/// with the `largest` biggest buffers at the peak. O(ops + resident buffers).
MemoryProfile analyze_memory(const Program& program, double capacity_bytes, int largest = 5);

/// Per-core bytes of the buffers live through the whole step (Program::resident).
double resident_bytes(const Program& program);

/// Per-core bytes live while op i runs (resident included), for every op; empty if the Program
/// carries no sizes.
std::vector<double> live_bytes_per_op(const Program& program);

/// "peak 17.2 GiB per core exceeds the 16 GiB of HBM at op X: activations 9.1 GiB, ..." (the
/// three largest classes at the peak).
std::string describe_oom(const MemoryProfile& m);

}  // namespace tpusim
