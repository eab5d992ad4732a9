#pragma once
// The compiler stage between the partitioned SPMD Program and the simulator, modelled on what
// XLA's TPU backend does to a graph (docs/compiler.md):
//
//   Program p = compile(build_program(cfg, topology, hw), hw, compiler_options(cfg));
//
// Passes, in order: SPMD copies (halo concatenation under spatial partitioning), tiled layouts
// (per-core tensors padded to the dtype's (8|16, 128) tile), fusion (compiler.fusion = xla) and
// CMEM placement (chips with common memory). A Program without memory sizes (a trace) passes
// through unchanged.
#include "core/config.hpp"
#include "core/hardware.hpp"
#include "models/program.hpp"
#include "models/workload.hpp"
#include "topologies/topology.hpp"

namespace tpusim {

enum class FusionMode { None, Xla };

struct CompilerOptions {
  FusionMode fusion = FusionMode::Xla;  ///< compiler.fusion
  bool tiled_layouts = true;            ///< compiler.tiled_layouts
  bool spmd_copies = true;              ///< compiler.spmd_copies
};

/// Reads the compiler.* parameters of a validated study.
CompilerOptions compiler_options(const Config& cfg);

/// Runs the passes `options` enables over `program` for the chip `hw`. Taken by value: a caller
/// that moves its Program in (`compile(build_program(...), ...)`) is not copied.
Program compile(Program program, const HardwareSpec& hw, const CompilerOptions& options);

/// build_program_of() then compile() with the study's compiler options.
Program compiled_program(const Config& cfg, const Topology& topology, const HardwareSpec& hw,
                         ProgramKind kind);
/// The study's own program (workload.program), compiled.
Program compiled_program(const Config& cfg, const Topology& topology, const HardwareSpec& hw);

/// What the passes did, for reports (counted from the compiled Program).
struct CompileSummary {
  int fusions = 0;           ///< fused ops (two or more members)
  int fused_ops = 0;         ///< member ops inside them
  int copies = 0;            ///< ops the SPMD pass inserted
  double padding_bytes = 0;  ///< per core, HBM traffic the tiled layout adds
  double cmem_bytes = 0;     ///< per core, traffic served by CMEM
};
CompileSummary summarize(const Program& compiled);

}  // namespace tpusim
