#pragma once
// Helpers of the compiler passes that rebuild a Program's op list.
#include <vector>

#include "models/program.hpp"

namespace tpusim {

/// Rewrites every op index inside `op` (deps, reads, output lifetimes) through `new_index`
/// (old index -> new index); drops dependencies on `self` and duplicates.
void remap_indices(Op& op, const std::vector<int>& new_index, int self);

/// The earlier ops `op` waits for or reads from (its deps, then the producers of its reads that
/// are not among them).
std::vector<int> inputs_of(const Op& op);

/// For every op, the later ops that depend on it or read its output.
std::vector<std::vector<int>> readers_of(const Program& program);

}  // namespace tpusim
