#include "compiler/cmem_placement.hpp"

#include <algorithm>

namespace tpusim {
namespace {

struct Buffer {
  int op = -1;
  double bytes = 0;     ///< all outputs of the op
  double accessed = 0;  ///< written once + read by every reader
  int end = -1;         ///< last op during which it is live
};

std::vector<Buffer> buffers(const Program& p) {
  std::vector<Buffer> out(p.ops.size());
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    Buffer& b = out[i];
    b.op = static_cast<int>(i);
    b.end = static_cast<int>(i);
    if (op.is_collective) continue;
    auto add = [&](const OpOutput& o) {
      b.bytes += o.bytes;
      b.end = std::max(b.end, o.last_use);
    };
    add(op.output);
    for (const OpOutput& o : op.more_outputs) add(o);
    b.accessed += std::min(op.compute.bytes_written, b.bytes);
  }
  for (const Op& op : p.ops)
    for (const DataRead& r : op.reads) out[r.producer].accessed += r.bytes;
  return out;
}

// Removes the traffic of the buffers marked `in_cmem` from HBM.
void move_to_cmem(Program& p, const std::vector<bool>& in_cmem) {
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    Op& op = p.ops[i];
    if (in_cmem[i]) {
      double bytes = op.output.bytes;
      for (OpOutput& o : op.more_outputs) {
        bytes += o.bytes;
        o.bytes = 0;
      }
      op.output.bytes = 0;
      const double written = std::min(op.compute.bytes_written, bytes);
      op.compute.bytes_written -= written;
      op.cmem_bytes += written;
    }
    for (const DataRead& r : op.reads)
      if (in_cmem[r.producer]) {
        const double read = std::min(op.compute.bytes_read, r.bytes);
        op.compute.bytes_read -= read;
        op.cmem_bytes += read;
      }
  }
}

}  // namespace

void place_in_cmem(Program& p, double capacity) {
  std::vector<Buffer> all = buffers(p);
  std::vector<Buffer> order;
  for (const Buffer& b : all)
    if (b.bytes > 0 && b.bytes <= capacity && b.accessed > 0) order.push_back(b);
  std::stable_sort(order.begin(), order.end(), [](const Buffer& a, const Buffer& b) {
    return a.accessed / a.bytes > b.accessed / b.bytes;
  });
  std::vector<double> used(p.ops.size(), 0);
  std::vector<int> placed;
  for (const Buffer& b : order) {
    const auto first = used.begin() + b.op, last = used.begin() + b.end + 1;
    if (*std::max_element(first, last) + b.bytes > capacity) continue;
    for (auto it = first; it != last; ++it) *it += b.bytes;
    placed.push_back(b.op);
  }
  std::vector<bool> in_cmem(p.ops.size(), false);
  for (int i : placed) in_cmem[i] = true;
  move_to_cmem(p, in_cmem);
}

void place_in_cmem_optimistic(Program& p, double capacity) {
  const std::vector<Buffer> all = buffers(p);
  std::vector<bool> in_cmem(p.ops.size(), false);
  for (std::size_t i = 0; i < all.size(); ++i)
    in_cmem[i] = all[i].bytes > 0 && all[i].bytes <= capacity && all[i].accessed > 0;
  move_to_cmem(p, in_cmem);
}

}  // namespace tpusim
