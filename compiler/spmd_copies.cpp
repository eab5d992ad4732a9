#include "compiler/spmd_copies.hpp"

#include <algorithm>

#include "compiler/program_rewrite.hpp"

namespace tpusim {
namespace {

bool is_halo(const Op& op) {
  return op.is_collective && op.collective.kind == CollectiveKind::CollectivePermute &&
         op.output.cls == MemoryClass::Halos;
}

double halo_bytes_of(const Program& p, const Op& op) {
  double b = 0;
  for (int d : op.deps)
    if (is_halo(p.ops[d])) b += p.ops[d].output.bytes;
  return b;
}

// The shard the window op reads: its largest operand from a compute op.
DataRead shard_read(const Program& p, const Op& op) {
  DataRead best;
  for (const DataRead& r : op.reads)
    if (!p.ops[r.producer].is_collective && r.bytes > best.bytes) best = r;
  return best;
}

// The copy before window op `w` (old indices; remapped by the caller).
Op halo_concat(const Program& p, int w) {
  const Op& win = p.ops[w];
  const DataRead shard = shard_read(p, win);
  const double bytes = shard.bytes + halo_bytes_of(p, win);
  Op c;
  c.name = win.name + ".halo_concat";
  c.kind = kSpmdCopyKind;
  c.phase = win.phase;
  c.dtype = DType::BF16;
  c.deps = win.deps;
  if (shard.producer >= 0) c.reads.push_back(shard);
  for (int d : win.deps)
    if (is_halo(p.ops[d])) c.reads.push_back({d, p.ops[d].output.bytes});
  c.compute.bytes_read = bytes;
  c.compute.bytes_written = bytes;
  c.compute.vpu_elements = bytes / dtype_bytes(DType::BF16);  // one move per element
  c.compute.vpu_ops_per_element = 1;
  c.output = {bytes, DType::BF16, MemoryClass::Halos, w};
  return c;
}

}  // namespace

Program insert_spmd_copies(Program p) {
  std::vector<bool> copy(p.ops.size(), false);
  std::vector<int> new_index(p.ops.size());
  int next = 0;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    copy[i] = !op.is_collective &&
              std::any_of(op.deps.begin(), op.deps.end(), [&](int d) { return is_halo(p.ops[d]); });
    if (copy[i]) ++next;
    new_index[i] = next++;
  }
  if (next == static_cast<int>(p.ops.size())) return p;
  // The new Program takes every field but the ops from `p`, which keeps its ops to read from.
  Program out;
  std::swap(out.ops, p.ops);
  std::swap(out, p);
  out.ops.reserve(static_cast<std::size_t>(next));
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const int n = new_index[i];
    if (copy[i]) {
      Op c = halo_concat(p, static_cast<int>(i));
      remap_indices(c, new_index, n - 1);
      c.output.last_use = n;
      out.ops.push_back(std::move(c));
    }
    Op op = p.ops[i];  // copied: later copies read earlier ops' halos
    remap_indices(op, new_index, n);
    if (copy[i]) op.deps.push_back(n - 1);
    out.ops.push_back(std::move(op));
  }
  return out;
}

}  // namespace tpusim
