#pragma once
// Copies SPMD partitioning inserts into the per-core program. Under spatial partitioning XLA
// exchanges a window op's halos with collective-permutes and then materialises the halo'd shard
// (concatenate the shard with the rows received, pad the image edges) before the op reads it:
// one copy op per exchanged window op, reading and writing the shard plus its halos.
#include "models/program.hpp"

namespace tpusim {

/// Op::kind of the copies the pass inserts.
inline constexpr const char* kSpmdCopyKind = "copy";

/// The Program with a halo-concatenation copy before every op that waits for halo exchanges.
/// By value: a Program moved in is returned without a copy when nothing waits for halos.
Program insert_spmd_copies(Program program);

}  // namespace tpusim
