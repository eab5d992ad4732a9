#include "compiler/fusion.hpp"

#include <algorithm>

#include "compiler/program_rewrite.hpp"
#include "compiler/tiled_layout.hpp"

namespace tpusim {
namespace {

struct Fusion {
  std::vector<int> members;  ///< old op indices, in program order
  bool has_mxu = false;
  bool open = true;
  double tile_bytes = 0;  ///< VMEM of one tile of every tensor it touches
};

// At most this many ops (independent of the fusion) between a fusion's last member and an op
// joining it. XLA fuses on the HLO graph, where order is free; tpusim keeps the Program's order
// and runs a fusion where its last member ran, so a fusion spanning a long stretch would keep its
// early members' inputs live across it (a memory peak XLA does not have).
constexpr int kMaxOpsBetween = 1;

bool fusible(const Op& op) { return !op.is_collective && op.fusion_role != FusionRole::Opaque; }
bool barrier(const Op& op) { return op.is_collective || op.kind == "infeed"; }

double input_tile_bytes(const Program& p, const Op& op) {
  double b = 0;
  for (const DataRead& r : op.reads) b += tile_bytes(p.ops[r.producer]);
  return b;
}

class FusionPass {
 public:
  FusionPass(Program& p, double vmem) : p_(p), vmem_(vmem), group_(p.ops.size(), -1) {}

  Program run() {
    for (std::size_t i = 0; i < p_.ops.size(); ++i) place(static_cast<int>(i));
    return rebuild();
  }

 private:
  // Whether old op `u` is a member of fusion `f`.
  bool in(int u, const Fusion& f) const { return group_[u] >= 0 && &groups_[group_[u]] == &f; }

  bool can_join(int i, const Fusion& f) const {
    const Op& op = p_.ops[i];
    if (!f.open || (op.fusion_role == FusionRole::Mxu && f.has_mxu)) return false;
    if (i - f.members.back() > kMaxOpsBetween + 1) return false;
    for (int u : inputs_of(op))
      if (in(u, f) && p_.ops[u].fusion_role == FusionRole::Reduction) return false;
    const double tiles = f.tile_bytes + tile_bytes(op) + input_tile_bytes(p_, op);
    return 2 * tiles <= vmem_;  // double-buffered
  }

  void place(int i) {
    const Op& op = p_.ops[i];
    if (barrier(op)) {
      for (int g : opened_) groups_[g].open = false;
      opened_.clear();
      return;
    }
    std::vector<int> inputs = inputs_of(op);
    int join = -1;
    if (fusible(op)) {
      std::vector<int> recent_first = inputs;
      std::sort(recent_first.rbegin(), recent_first.rend());  // the most recent producer's first
      for (int u : recent_first)
        if (group_[u] >= 0 && can_join(i, groups_[group_[u]])) {
          join = group_[u];
          break;
        }
    }
    for (int u : inputs)  // a reader outside a fusion closes it
      if (group_[u] >= 0 && group_[u] != join) groups_[group_[u]].open = false;
    if (!fusible(op)) return;
    if (join < 0) {
      join = static_cast<int>(groups_.size());
      groups_.emplace_back();
      opened_.push_back(join);
    }
    Fusion& f = groups_[join];
    f.members.push_back(i);
    f.has_mxu = f.has_mxu || op.fusion_role == FusionRole::Mxu;
    f.tile_bytes += tile_bytes(op) + input_tile_bytes(p_, op);
    group_[i] = join;
  }

  bool read_outside(int m, const Fusion& f) const {
    if (readers_[m].empty()) return true;  // a result of the program
    for (int r : readers_[m])
      if (!in(r, f)) return true;
    return false;
  }

  Op fused_op(const Fusion& f) const;

  Program rebuild() {
    readers_ = readers_of(p_);
    std::vector<int> new_index(p_.ops.size(), -1);
    std::vector<int> source;  // per new op: the fusion (>= 0) or -1 - old index
    for (std::size_t i = 0; i < p_.ops.size(); ++i) {
      const int g = group_[i];
      if (g >= 0 && groups_[g].members.size() > 1) {
        if (groups_[g].members.back() != static_cast<int>(i)) continue;
        for (int m : groups_[g].members) new_index[m] = static_cast<int>(source.size());
        source.push_back(g);
      } else {
        new_index[i] = static_cast<int>(source.size());
        source.push_back(-1 - static_cast<int>(i));
      }
    }
    // Fused ops read their members, which may come later than an unfused op: all are built
    // first, then the unfused ops are moved (each is read by no fused op, being in none).
    std::vector<Op> fused(source.size());
    for (std::size_t n = 0; n < source.size(); ++n)
      if (source[n] >= 0) fused[n] = fused_op(groups_[source[n]]);
    for (std::size_t n = 0; n < source.size(); ++n)
      if (source[n] < 0) fused[n] = std::move(p_.ops[-1 - source[n]]);
    for (std::size_t n = 0; n < source.size(); ++n)
      remap_indices(fused[n], new_index, static_cast<int>(n));
    Program out;
    p_.ops.swap(fused);
    std::swap(out, p_);  // every field of the input, with the new ops
    return out;
  }

  Program& p_;
  double vmem_;
  std::vector<int> group_;  ///< per old op: its fusion, or -1
  std::vector<Fusion> groups_;
  std::vector<int> opened_;  ///< fusions opened since the last barrier (some closed since)
  std::vector<std::vector<int>> readers_;
};

// Sums the members' costs: HBM reads from outside, writes of what is read outside, all MXU and
// vector work (as one stream of vector ops), one launch.
Op FusionPass::fused_op(const Fusion& f) const {
  const Op* root = &p_.ops[f.members.front()];
  for (int m : f.members)
    if (p_.ops[m].fusion_role == FusionRole::Mxu) root = &p_.ops[m];
  Op op;
  op.name = root->name + ".fusion";
  op.kind = "fusion:" + root->kind;
  op.phase = root->phase;
  op.dtype = root->dtype;
  op.shapes = root->shapes;
  op.fusion_role = FusionRole::Opaque;
  op.out_shape = root->out_shape;
  op.feature_map = root->feature_map;
  op.compute.matmul = root->compute.matmul;
  op.compute.mxu_dtype = root->compute.mxu_dtype;
  op.compute.vpu_ops_per_element = 1;
  bool first_output = true;
  for (int m : f.members) {
    const Op& o = p_.ops[m];
    const ComputeCost& c = o.compute;
    op.fused.push_back(o.name);
    op.compute.flops += c.flops;
    op.compute.vpu_elements += c.vpu_elements * c.vpu_ops_per_element;
    const double traffic = c.bytes_read + c.bytes_written;
    double read = c.bytes_read, written = 0;
    for (const DataRead& r : o.reads)
      if (in(r.producer, f))
        read -= r.bytes;
      else
        op.reads.push_back(r);
    for (int d : o.deps) op.deps.push_back(d);
    if (read_outside(m, f)) {
      written = c.bytes_written;
      (first_output ? op.output : op.more_outputs.emplace_back()) = o.output;
      first_output = false;
    }
    op.compute.bytes_read += std::max(0.0, read);
    op.compute.bytes_written += written;
    if (traffic > 0)
      op.padding_bytes += o.padding_bytes * (std::max(0.0, read) + written) / traffic;
  }
  if (first_output) op.output = {0, root->output.dtype, root->output.cls, -1};
  return op;
}

}  // namespace

double tile_bytes(const Op& op) {
  if (op.out_shape.empty()) return 0;
  const DType d = op.output.dtype;
  return static_cast<double>(tile_rows(d)) * pad_to(op.out_shape.back(), kTileLanes) *
         dtype_bytes(d);
}

Program fuse(Program program, double vmem_bytes) { return FusionPass(program, vmem_bytes).run(); }

}  // namespace tpusim
