#pragma once
// Rescaling a recorded Program to another mesh (another data degree or chip count).
#include <vector>

#include "models/program.hpp"

namespace tpusim {

/// The Program `program` would be on a mesh whose axes named in `new_sizes` have the given sizes
/// (axes not named keep theirs; every name must be an axis of the Program's mesh).
///
/// Rules (docs/traces.md, "Rescaling"):
/// - Compute ops are per-core and stay as recorded (shapes, FLOPs, bytes, measured durations).
/// - Collectives over mesh axes keep their per-core buffer size (`bytes`: a gradient all-reduce
///   stays the size of the parameters); their groups follow the axes and so grow or shrink. What
///   changes with the group size G is derived by the executor: a reduce-scatter's per-core output
///   and an all-gather's per-core contribution are bytes / G, an all-to-all sends bytes / G to
///   each peer.
/// - Explicit replica groups that are exactly the groups of some mesh axes are turned into those
///   axes and rescale like them; any other explicit groups cannot be re-derived: ConfigError
///   naming the op.
/// - examples_per_step scales with the "data" axis (the per-replica batch stays).
/// Throws ConfigError for unknown axes, sizes below 1, or a batch that does not divide.
Program rescale(const Program& program, const std::vector<MeshAxis>& new_sizes);

}  // namespace tpusim
