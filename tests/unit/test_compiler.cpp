// The compiler stage (compiler/): fusion, tiled layouts, CMEM placement and SPMD copies against
// closed forms derived from the ops' sizes and the hardware parameters.
#include <catch2/catch.hpp>
#include <cmath>

#include "compiler/cmem_placement.hpp"
#include "compiler/compiler.hpp"
#include "compiler/fusion.hpp"
#include "compiler/spmd_copies.hpp"
#include "compiler/tiled_layout.hpp"
#include "model_study.hpp"
#include "models/conv_ops.hpp"
#include "models/memory/memory_model.hpp"
#include "models/ops.hpp"
#include "models/parallelism/layout.hpp"
#include "models/parallelism/partitioner.hpp"

using namespace tpusim;
using tpusim::test::model_study;
using tpusim::test::program_of;
using tpusim::test::single_core;

namespace {
constexpr double kVmem = 16.0 * 1048576;

CompilerOptions only_fusion(FusionMode f) {
  CompilerOptions o;
  o.fusion = f;
  o.tiled_layouts = false;
  o.spmd_copies = false;
  return o;
}

HardwareSpec v3() {
  HardwareSpec hw;
  hw.vmem_bytes_per_core = kVmem;
  return hw;
}

double hbm_bytes(const Program& p) {
  double s = 0;
  for (const Op& op : p.ops) s += op.compute.bytes_read + op.compute.bytes_written;
  return s;
}

// A compute op of `role` reading `reads` ({producer, bytes}) and writing `out` bytes.
Op compute(std::string name, FusionRole role, std::vector<DataRead> reads, double out,
           double extra_read = 0) {
  Op op;
  op.name = std::move(name);
  op.kind = role == FusionRole::Mxu ? "matmul" : "elementwise";
  op.fusion_role = role;
  op.reads = std::move(reads);
  op.compute.bytes_read = extra_read;
  for (const DataRead& r : op.reads) {
    op.deps.push_back(r.producer);
    op.compute.bytes_read += r.bytes;
  }
  op.compute.bytes_written = out;
  op.compute.vpu_elements = out / 2;
  op.output.bytes = out;
  return op;
}

Program program_from(std::vector<Op> ops) {
  Program p;
  p.has_memory = true;
  p.mesh = {{"data", 1}};
  p.ops = std::move(ops);
  for (std::size_t i = 0; i < p.ops.size(); ++i)
    for (const DataRead& r : p.ops[i].reads)
      p.ops[r.producer].output.last_use =
          std::max(p.ops[r.producer].output.last_use, static_cast<int>(i));
  return p;
}

// conv (3x3, Cin -> Cout) then ReLU on an N x H x W map, forward only, one core.
Program conv_relu(std::int64_t n, std::int64_t hw, std::int64_t cin, std::int64_t cout) {
  OpGraph g;
  g.replica_batch = n;
  const FeatureMap in{n, hw, hw, cin};
  const int conv = g.add(conv2d("conv", in, cout, 3, 1, 128));
  const FeatureMap out = output_of(g.node(conv));
  g.add(map_op(OpKind::Elementwise, "relu", out, 1, vpu_ops::kRelu, vpu_ops::kReluGrad), {conv});
  return partition(g, single_core());
}
}  // namespace

TEST_CASE("compiler: a fused conv-ReLU chain reads its input and weights once and writes once") {
  const std::int64_t n = 8, hw = 28, cin = 128, cout = 256;
  const Program unfused = conv_relu(n, hw, cin, cout);
  const Program fused = compile(unfused, v3(), only_fusion(FusionMode::Xla));
  const double x = 2.0 * n * hw * hw * cin, w = 2.0 * 9 * cin * cout, y = 2.0 * n * hw * hw * cout;
  // Unfused: the conv reads X and W and writes Y; the ReLU reads Y and writes its own Y.
  REQUIRE(unfused.ops.size() == 2);
  CHECK(hbm_bytes(unfused) == Approx(x + w + y + y + y));
  REQUIRE(fused.ops.size() == 1);
  CHECK(fused.ops[0].fused == std::vector<std::string>{"conv", "relu"});
  CHECK(fused.ops[0].compute.bytes_read == Approx(x + w));
  CHECK(fused.ops[0].compute.bytes_written == Approx(y));
  CHECK(fused.ops[0].compute.matmul->m == unfused.ops[0].compute.matmul->m);
  // compiler.fusion = none keeps every op.
  CHECK(compile(unfused, v3(), only_fusion(FusionMode::None)).ops.size() == 2);
}

TEST_CASE("compiler: batch-norm statistics fuse with their conv - the apply waits for them") {
  // conv1 -> stats -> apply(+ReLU) -> conv2: the statistics are a full reduction of conv1's
  // output, so the apply cannot run in conv1's pass; it fuses into conv2 as an input fusion,
  // and the normalised map (read by nothing else) never reaches HBM.
  const std::int64_t n = 8, hw = 14, c = 256;
  OpGraph g;
  g.replica_batch = n;
  const FeatureMap m{n, hw, hw, c};
  const int conv1 = g.add(conv2d("conv1", m, c, 1, 1, 128));
  const int stats = g.add(batch_norm_stats("bn.stats", m), {conv1});
  const int apply = g.add(batch_norm_apply("bn.apply", m, true), {conv1, stats});
  g.add(conv2d("conv2", m, c, 1, 1, 128), {apply});
  const Program unfused = partition(g, single_core());
  const Program fused = compile(unfused, v3(), only_fusion(FusionMode::Xla));
  REQUIRE(fused.ops.size() == 2);
  CHECK(fused.ops[0].fused == std::vector<std::string>{"conv1", "bn.stats"});
  CHECK(fused.ops[1].fused == std::vector<std::string>{"bn.apply", "conv2"});
  const double map = 2.0 * n * hw * hw * c, w = 2.0 * c * c, sums = 2.0 * c * 4;
  CHECK(fused.ops[0].compute.bytes_written == Approx(map + sums));
  CHECK(fused.ops[1].compute.bytes_written == Approx(map));  // conv2's output only
  CHECK(fused.ops[1].compute.bytes_read == Approx(unfused.ops[2].compute.bytes_read + w));
}

TEST_CASE("compiler: a fusion never spans a collective") {
  // mxu -> all-reduce -> vector reading both: without the collective the two would fuse.
  Op ar;
  ar.name = "ar";
  ar.kind = "all-reduce";
  ar.is_collective = true;
  ar.collective.axes = {"data"};
  ar.collective.bytes = 1024;
  ar.deps = {0};
  Op v = compute("v", FusionRole::Vector, {{0, 4096}}, 4096);
  v.deps.push_back(1);
  const Program with =
      fuse(program_from({compute("mm", FusionRole::Mxu, {}, 4096, 8192), ar, v}), kVmem);
  CHECK(with.ops.size() == 3);
  for (const Op& op : with.ops) CHECK(op.fused.empty());
  const Program without = fuse(program_from({compute("mm", FusionRole::Mxu, {}, 4096, 8192),
                                             compute("v", FusionRole::Vector, {{0, 4096}}, 4096)}),
                               kVmem);
  CHECK(without.ops.size() == 1);
}

TEST_CASE("compiler: a tensor another op still needs is written out of the fusion") {
  // a -> b (fused), and c (opaque, later) reads a: the fusion writes a and b.
  Op c = compute("c", FusionRole::Opaque, {{0, 1000}}, 10);
  const Program p = fuse(program_from({compute("a", FusionRole::Vector, {}, 1000, 500),
                                       compute("b", FusionRole::Vector, {{0, 1000}}, 2000), c}),
                         kVmem);
  REQUIRE(p.ops.size() == 2);
  CHECK(p.ops[0].compute.bytes_read == 500);
  CHECK(p.ops[0].compute.bytes_written == 3000);
  CHECK(p.ops[0].output.bytes + p.ops[0].more_outputs.at(0).bytes == 3000);
  CHECK(p.ops[1].deps == std::vector<int>{0});
}

TEST_CASE("compiler: a [N, 64] bf16 tensor occupies ceil(N / 16) tiles of 16 x 128 x 2 bytes") {
  for (std::int64_t n : {1, 15, 16, 17, 1000, 4096}) {
    const double tiles = std::ceil(n / 16.0);
    CHECK(padded_elements({n, 64}, DType::BF16, false) * 2 == tiles * 16 * 128 * 2);
    CHECK(padded_elements({n, 64}, DType::F32, false) * 4 == std::ceil(n / 8.0) * 8 * 128 * 4);
  }
  // A feature map keeps C minor and picks the second-minor dimension that pads least.
  // {8, 7, 7, 64}: N, H and W all pad to 16 rows; N (8 -> 16) adds the fewest.
  CHECK(padded_elements({8, 7, 7, 64}, DType::BF16, true) == 16 * 7 * 7 * 128);
  CHECK(padded_elements({32, 7, 7, 256}, DType::BF16, true) == 32 * 7 * 7 * 256);
}

TEST_CASE("compiler: tiled layouts pad a 64-channel map's traffic and never lower memory") {
  const Program p = conv_relu(8, 32, 64, 64);
  CompilerOptions o = only_fusion(FusionMode::None);
  o.tiled_layouts = true;
  const Program padded = compile(p, v3(), o);
  // The conv's output (and the ReLU's) are 64 channels: twice the bytes in (16, 128) tiles.
  CHECK(padded.ops[0].compute.bytes_written == Approx(2 * p.ops[0].compute.bytes_written));
  CHECK(padded.ops[1].compute.bytes_read == Approx(2 * p.ops[1].compute.bytes_read));
  CHECK(padded.ops[1].padding_bytes ==
        Approx(p.ops[1].compute.bytes_read + p.ops[1].compute.bytes_written));
  CHECK(analyze_memory(padded, 1e18).peak_bytes >= analyze_memory(p, 1e18).peak_bytes);
}

TEST_CASE("compiler: the memory peak of a fused program is never above the unfused one's") {
  // Every model's training step on 4 chips (8 cores, data parallel): fusion removes the
  // intermediates read only inside a fusion and never moves a tensor's first use earlier.
  const std::vector<std::pair<std::string, long long>> models = {{"bert_large", 64},
                                                                 {"transformer_big", 64},
                                                                 {"resnet50", 256},
                                                                 {"ssd", 64},
                                                                 {"maskrcnn", 16}};
  for (const auto& [model, batch] : models) {
    INFO(model);
    const Program p = program_of(model_study(model, "2x2", batch));
    CompilerOptions o = only_fusion(FusionMode::Xla);
    o.tiled_layouts = true;
    CompilerOptions unfused = o;
    unfused.fusion = FusionMode::None;
    const Program fused = compile(p, v3(), o);
    CHECK(summarize(fused).fusions > 0);
    CHECK(analyze_memory(fused, 1e18).peak_bytes <=
          analyze_memory(compile(p, v3(), unfused), 1e18).peak_bytes);
  }
}

TEST_CASE("compiler: a buffer placed in CMEM adds no HBM traffic") {
  // a writes 1 MiB that b reads: with 1 MiB + 5 bytes of CMEM per core neither touches HBM for
  // it (b's own 10-byte result no longer fits beside it).
  const double mib = 1048576;
  Program p = program_from({compute("a", FusionRole::Opaque, {}, mib, 100),
                            compute("b", FusionRole::Opaque, {{0, mib}}, 10)});
  place_in_cmem(p, mib + 5);
  CHECK(p.ops[0].compute.bytes_written == 0);
  CHECK(p.ops[0].compute.bytes_read == 100);
  CHECK(p.ops[1].compute.bytes_read == 0);
  CHECK(p.ops[0].cmem_bytes + p.ops[1].cmem_bytes == 2 * mib);
  CHECK(analyze_memory(p, 1e18).peak_bytes == 10);  // only b's output is in HBM
  // Too small a CMEM places nothing.
  Program q = program_from({compute("a", FusionRole::Opaque, {}, mib, 100),
                            compute("b", FusionRole::Opaque, {{0, mib}}, 10)});
  place_in_cmem(q, mib / 2);
  CHECK(q.ops[0].compute.bytes_written == mib);
}

TEST_CASE("compiler: CMEM takes the most accessed bytes per byte first") {
  // a (1 MiB, read 3 times) and b (1 MiB, read once) both live over op 2; 1.5 MiB of CMEM holds
  // one of them: a.
  const double mib = 1048576;
  Program p = program_from({compute("a", FusionRole::Opaque, {}, mib),
                            compute("b", FusionRole::Opaque, {}, mib),
                            compute("r1", FusionRole::Opaque, {{0, mib}, {1, mib}}, 1),
                            compute("r2", FusionRole::Opaque, {{0, mib}}, 1),
                            compute("r3", FusionRole::Opaque, {{0, mib}}, 1)});
  place_in_cmem(p, 1.5 * mib);
  CHECK(p.ops[0].compute.bytes_written == 0);
  CHECK(p.ops[1].compute.bytes_written == mib);
}

TEST_CASE("compiler: the optimistic CMEM counts every buffer that fits alone, none larger") {
  // The same program as above with 1.5 MiB of CMEM: the placement holds a only; the bound's
  // pass counts a and b both (each fits alone) and leaves no op more HBM traffic than the
  // placement does.
  const double mib = 1048576;
  auto program = [&] {
    return program_from({compute("a", FusionRole::Opaque, {}, mib),
                         compute("b", FusionRole::Opaque, {}, mib),
                         compute("c", FusionRole::Opaque, {}, 2 * mib),
                         compute("r1", FusionRole::Opaque, {{0, mib}, {1, mib}, {2, 2 * mib}}, 1),
                         compute("r2", FusionRole::Opaque, {{0, mib}}, 1)});
  };
  Program placed = program(), optimistic = program();
  place_in_cmem(placed, 1.5 * mib);
  place_in_cmem_optimistic(optimistic, 1.5 * mib);
  CHECK(optimistic.ops[0].compute.bytes_written == 0);
  CHECK(optimistic.ops[1].compute.bytes_written == 0);
  CHECK(optimistic.ops[2].compute.bytes_written == 2 * mib);  // larger than the CMEM
  CHECK(optimistic.ops[3].compute.bytes_read == 2 * mib);     // c's bytes only
  for (std::size_t i = 0; i < placed.ops.size(); ++i) {
    CHECK(optimistic.ops[i].compute.bytes_read <= placed.ops[i].compute.bytes_read);
    CHECK(optimistic.ops[i].compute.bytes_written <= placed.ops[i].compute.bytes_written);
  }
  CHECK(placed.ops[1].compute.bytes_written == mib);
}

TEST_CASE("compiler: a spatially partitioned window op pays its halo concatenation copy") {
  // conv -> two halo permutes -> conv: the copy reads and writes the shard plus both halos.
  Op h1, h2;
  for (Op* h : {&h1, &h2}) {
    h->kind = "collective-permute";
    h->is_collective = true;
    h->collective.kind = CollectiveKind::CollectivePermute;
    h->collective.axes = {"data"};
    h->collective.bytes = 300;
    h->output = {300, DType::BF16, MemoryClass::Halos, 3};
    h->deps = {0};
  }
  h1.name = "w.halo+1";
  h2.name = "w.halo-1";
  Op w = compute("w", FusionRole::Mxu, {{0, 5000}}, 5000, 100);
  w.deps = {0, 1, 2};
  const Program p =
      insert_spmd_copies(program_from({compute("x", FusionRole::Mxu, {}, 5000, 100), h1, h2, w}));
  REQUIRE(p.ops.size() == 5);
  const Op& copy = p.ops[3];
  CHECK(copy.kind == std::string(kSpmdCopyKind));
  CHECK(copy.compute.bytes_read == 5600);
  CHECK(copy.compute.bytes_written == 5600);
  CHECK(copy.output.last_use == 4);
  CHECK(std::find(p.ops[4].deps.begin(), p.ops[4].deps.end(), 3) != p.ops[4].deps.end());
  p.validate();
}

TEST_CASE("compiler: VMEM bounds a fusion: one tile of every tensor it touches, double-buffered") {
  // a -> b, both [64, 128] bf16: a tile is 16 x 128 x 2 = 4 KiB. Fused, the loop holds a's tile
  // (its output), b's tile and b's input tile (a's again): 12 KiB, twice for double buffering.
  auto two_ops = [] {
    Op a = compute("a", FusionRole::Vector, {}, 64 * 128 * 2, 100);
    Op b = compute("b", FusionRole::Vector, {{0, 64 * 128 * 2}}, 64 * 128 * 2);
    a.out_shape = b.out_shape = {64, 128};
    return program_from({a, b});
  };
  const double tile = 16 * 128 * 2;
  CHECK(tile_bytes(two_ops().ops[0]) == tile);
  CHECK(fuse(two_ops(), 2 * 3 * tile).ops.size() == 1);
  CHECK(fuse(two_ops(), 2 * 3 * tile - 1).ops.size() == 2);
}

TEST_CASE("compiler: a 3-channel map no MXU op reads puts its width on the lanes") {
  // Mask R-CNN's P2 objectness on one TPU v4 chip: [16, 208, 336, 3] bf16. Channels on the
  // lanes pad 3 to 128; W (336 -> 384) on the lanes with H (208, a multiple of 16) on the rows
  // pads least.
  const std::vector<std::int64_t> map{16, 208, 336, 3};
  CHECK(least_padded_elements(map, DType::BF16) == 16.0 * 3 * 208 * 384);
  CHECK(padded_elements(map, DType::BF16, true) == 16.0 * 208 * 336 * 128);
  // A [N, 64] matrix: 64 on the rows (a multiple of 16), N on the lanes, when N is a multiple
  // of 128; [1000, 64] pads 64 to 128 on the lanes either way, N (1000 -> 1024) least.
  CHECK(least_padded_elements({4096, 64}, DType::BF16) == 4096.0 * 64);
  CHECK(least_padded_elements({1000, 64}, DType::F32) == 1024.0 * 64);

  // The objectness conv's output read by a vector op whose output `then` reads.
  auto program = [&](FusionRole then) {
    const double bytes = 16.0 * 208 * 336 * 3 * 2;
    Op conv = compute("objectness", FusionRole::Mxu, {}, bytes);
    conv.out_shape = map;
    conv.feature_map = true;
    return program_from({conv, compute("sigmoid", FusionRole::Vector, {{0, bytes}}, bytes),
                         compute("then", then, {{1, bytes}}, 100)});
  };
  CompilerOptions o = only_fusion(FusionMode::None);
  o.tiled_layouts = true;
  // Read by a loss or a top-k (opaque): nothing asks for the channels on the lanes.
  const Program free = compile(program(FusionRole::Opaque), v3(), o);
  CHECK(free.ops[0].output.bytes == Approx(16.0 * 3 * 208 * 384 * 2));
  CHECK(free.ops[1].compute.bytes_read == Approx(16.0 * 3 * 208 * 384 * 2));
  // A matmul behind the element-wise op: its operand's layout propagates back to the conv.
  const Program kept = compile(program(FusionRole::Mxu), v3(), o);
  CHECK(kept.ops[0].output.bytes == Approx(16.0 * 208 * 336 * 128 * 2));
}
