#include "compiler/compiler.hpp"

#include "compiler/cmem_placement.hpp"
#include "compiler/fusion.hpp"
#include "compiler/spmd_copies.hpp"
#include "compiler/tiled_layout.hpp"
#include "core/param_handle.hpp"
#include "core/params.hpp"

namespace tpusim {
namespace {
using T = ParamType;
// clang-format off
const Param<std::string> kCompilerFusion{{"compiler.fusion", T::String, "", "xla", "fusion pass: xla (loop, output, multi-output and input fusion as XLA's TPU backend does) or none (every op its own kernel through HBM)", -1e300, 1e300, {"xla", "none"}}};
const Param<bool> kCompilerTiledLayouts{{"compiler.tiled_layouts", T::Boolean, "", true, "pad every per-core tensor to the TPU tile of its dtype ((8, 128) 32-bit, (16, 128) bf16) in HBM traffic, vector work and memory"}};
const Param<bool> kCompilerSpmdCopies{{"compiler.spmd_copies", T::Boolean, "", true, "add the copies SPMD partitioning inserts (halo concatenation before a spatially partitioned window op)"}};
// clang-format on
}  // namespace

CompilerOptions compiler_options(const Config& cfg) {
  CompilerOptions o;
  o.fusion = kCompilerFusion(cfg) == "none" ? FusionMode::None : FusionMode::Xla;
  o.tiled_layouts = kCompilerTiledLayouts(cfg);
  o.spmd_copies = kCompilerSpmdCopies(cfg);
  return o;
}

Program compile(Program p, const HardwareSpec& hw, const CompilerOptions& options) {
  if (!p.has_memory) return p;
  if (options.spmd_copies) p = insert_spmd_copies(std::move(p));
  if (options.tiled_layouts) apply_tiled_layouts(p);
  if (options.fusion == FusionMode::Xla) p = fuse(std::move(p), hw.vmem_bytes_per_core);
  if (hw.cmem_bytes_per_chip > 0) place_in_cmem(p, hw.cmem_bytes_per_core());
  p.validate();
  return p;
}

Program compiled_program(const Config& cfg, const Topology& topology, const HardwareSpec& hw,
                         ProgramKind kind) {
  return compile(build_program_of(cfg, topology, hw, kind), hw, compiler_options(cfg));
}

Program compiled_program(const Config& cfg, const Topology& topology, const HardwareSpec& hw) {
  return compiled_program(cfg, topology, hw, program_kind(cfg));
}

CompileSummary summarize(const Program& p) {
  CompileSummary s;
  for (const Op& op : p.ops) {
    if (op.fused.size() > 1) {
      ++s.fusions;
      s.fused_ops += static_cast<int>(op.fused.size());
    }
    if (op.kind == kSpmdCopyKind) ++s.copies;
    s.padding_bytes += op.padding_bytes;
    s.cmem_bytes += op.cmem_bytes;
  }
  return s;
}

}  // namespace tpusim
