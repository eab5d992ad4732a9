#include "compiler/program_rewrite.hpp"

#include <algorithm>

namespace tpusim {

void remap_indices(Op& op, const std::vector<int>& new_index, int self) {
  std::vector<int> deps;
  for (int d : op.deps) {
    const int n = new_index[d];
    if (n != self && std::find(deps.begin(), deps.end(), n) == deps.end()) deps.push_back(n);
  }
  op.deps = std::move(deps);
  std::vector<DataRead> reads;
  for (const DataRead& r : op.reads)
    if (new_index[r.producer] != self) reads.push_back({new_index[r.producer], r.bytes});
  op.reads = std::move(reads);
  auto life = [&](OpOutput& o) {
    if (o.last_use >= 0) o.last_use = std::max(self, new_index[o.last_use]);
  };
  life(op.output);
  for (OpOutput& o : op.more_outputs) life(o);
}

std::vector<int> inputs_of(const Op& op) {
  std::vector<int> in = op.deps;
  for (const DataRead& r : op.reads)
    if (std::find(in.begin(), in.end(), r.producer) == in.end()) in.push_back(r.producer);
  return in;
}

std::vector<std::vector<int>> readers_of(const Program& p) {
  std::vector<std::vector<int>> readers(p.ops.size());
  for (std::size_t i = 0; i < p.ops.size(); ++i)
    for (int u : inputs_of(p.ops[i])) readers[u].push_back(static_cast<int>(i));
  return readers;
}

}  // namespace tpusim
