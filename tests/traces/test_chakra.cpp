// Chakra execution traces: export and import of SPMD Programs, the schema's field numbers on the
// wire, ranks that disagree, and malformed files.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <tuple>

#include "core/errors.hpp"
#include "tests/traces/trace_test_programs.hpp"
#include "traces/chakra/chakra.hpp"
#include "traces/chakra/chakra_et.pb.h"
#include "traces/chakra/chakra_stream.hpp"
#include "traces/format/mesh_groups.hpp"

using namespace tpusim;
using tpusim::testing::check_same_program;
using tpusim::testing::every_field_program;
using tpusim::testing::file_bytes;
namespace fs = std::filesystem;

namespace {
std::string temp_dir(const std::string& name) {
  const std::string dir = "/tmp/tpusim_chakra_test_" + std::to_string(::getpid()) + "_" + name;
  fs::remove_all(dir);
  return dir;
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}
// Durations that differ per op, so a mix-up shows: op i takes (i + 1) * 1500 ns.
std::vector<double> durations(const Program& p, double scale = 1) {
  std::vector<double> d;
  for (std::size_t i = 0; i < p.ops.size(); ++i) d.push_back(scale * 1500.0 * (i + 1));
  return d;
}
std::string export_program(const Program& p, const std::string& name,
                           trace::ChakraExportOptions options = {}, double scale = 1) {
  const std::string dir = temp_dir(name);
  trace::write_chakra(p, nlohmann::json{{"source", "test"}}, durations(p, scale), dir, options);
  return dir;
}
std::string import_error(const std::string& dir, trace::ChakraImportOptions options = {}) {
  try {
    trace::read_chakra(dir, options);
  } catch (const ConfigError& e) {
    REQUIRE(e.problems().size() == 1);
    return e.problems()[0].line();
  }
  return "(no error)";
}

// A minimal protobuf wire reader written from the encoding rules alone (not the generated code),
// so the test checks the field numbers of docs/chakra.md, not the .proto against itself.
struct Field {
  int number;
  int wire;
  std::uint64_t varint = 0;
  std::string bytes;
};
std::uint64_t varint(const std::string& s, std::size_t& pos) {
  std::uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const auto b = static_cast<unsigned char>(s.at(pos++));
    v |= std::uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}
std::vector<Field> fields(const std::string& msg) {
  std::vector<Field> out;
  std::size_t pos = 0;
  while (pos < msg.size()) {
    const auto key = varint(msg, pos);
    Field f{int(key >> 3), int(key & 7)};
    if (f.wire == 0) {
      f.varint = varint(msg, pos);
    } else if (f.wire == 1) {
      f.bytes = msg.substr(pos, 8);
      pos += 8;
    } else {
      REQUIRE(f.wire == 2);
      const auto len = varint(msg, pos);
      f.bytes = msg.substr(pos, len);
      pos += len;
    }
    out.push_back(f);
  }
  return out;
}
std::vector<std::string> messages(const std::string& file) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < file.size()) {
    const auto len = varint(file, pos);
    out.push_back(file.substr(pos, len));
    pos += len;
  }
  return out;
}
const Field* find_field(const std::vector<Field>& fs, int number) {
  for (const auto& f : fs)
    if (f.number == number) return &f;
  return nullptr;
}
const Field* field(const std::vector<Field>& fs, int number) {
  const Field* f = find_field(fs, number);
  INFO("field " << number);
  REQUIRE(f);
  return f;
}
// Node.attr (10) named `name`: its value field.
std::optional<Field> attribute(const std::vector<Field>& node, const std::string& name) {
  for (const auto& f : node)
    if (f.number == 10) {
      const auto a = fields(f.bytes);
      const Field* n = find_field(a, 1);
      if (n && n->bytes == name)
        for (const auto& v : a)
          if (v.number != 1 && v.number != 2) return v;
    }
  INFO("attribute " << name);
  FAIL("missing");
  return std::nullopt;
}
}  // namespace

TEST_CASE("a Program exported to Chakra and imported again is the same Program") {
  const Program p = every_field_program();
  const std::string dir = export_program(p, "roundtrip");
  long long devices = 1;
  for (const auto& a : p.mesh) devices *= a.size;
  for (long long r = 0; r < devices; ++r)
    CHECK(fs::exists(dir + "/tpusim." + std::to_string(r) + ".et"));
  CHECK_FALSE(fs::exists(dir + "/tpusim." + std::to_string(devices) + ".et"));
  const auto imported = trace::read_chakra(dir, {});
  CHECK(imported.ranks == devices);
  CHECK(imported.warnings.empty());
  check_same_program(p, imported.trace.program);
  CHECK(imported.trace.recorded_on["source"] == "test");
  fs::remove_all(dir);
}

TEST_CASE("the files use the Chakra schema's field numbers and values") {
  const Program p = every_field_program();
  const std::string dir = export_program(p, "wire");
  const auto msgs = messages(file_bytes(dir + "/tpusim.5.et"));
  // GlobalMetadata, then one node per op and a second one (the receive) for the permute.
  REQUIRE(msgs.size() == 1 + p.ops.size() + 1);
  const auto meta = fields(msgs[0]);
  REQUIRE(field(meta, 1));
  CHECK(field(meta, 1)->bytes == "0.0.4");  // GlobalMetadata.version = 1
  CHECK(field(meta, 2));                    // GlobalMetadata.attr = 2

  const auto mm = fields(msgs[1]);
  CHECK_FALSE(find_field(mm, 1));  // Node.id 0 is proto3's default, which is not written
  CHECK(field(fields(msgs[2]), 1)->varint == 1);    // Node.id
  CHECK(field(mm, 2)->bytes == "layer.0.qkv.fwd");  // Node.name
  CHECK(field(mm, 3)->varint == 4);                 // Node.type = COMP_NODE
  CHECK(field(mm, 7)->varint == 2);                 // duration_micros: 1500 ns rounded
  CHECK(attribute(mm, "num_ops")->number == 9);     // int64_val
  CHECK(attribute(mm, "num_ops")->varint == std::uint64_t(p.ops[0].compute.flops));
  CHECK(attribute(mm, "is_cpu_op")->number == 27);                                  // bool_val
  CHECK(attribute(mm, "tpusim_matmul")->number == 10);                              // int64_list
  CHECK(attribute(mm, "tpusim_kind")->number == 29);                                // string_val
  CHECK(attribute(mm, "tpusim_flops")->number == 3);                                // double_val
  CHECK(field(fields(field(mm, 8)->bytes), 2)->bytes == "[[8,1024],[1024,1536]]");  // inputs.shapes

  const auto gelu = fields(msgs[2]);
  CHECK(field(gelu, 5)->varint == 0);  // data_deps = 5 (packed: one byte, node 0)

  const auto ar = fields(msgs[3]);                 // all-reduce over data
  CHECK(field(ar, 3)->varint == 7);                // COMM_COLL_NODE
  CHECK(attribute(ar, "comm_type")->varint == 0);  // ALL_REDUCE
  CHECK(attribute(ar, "comm_size")->varint == 4u * 1024 * 1024);
  CHECK(attribute(ar, "involved_dim")->number == 28);  // bool_list: data yes, model no
  CHECK(attribute(ar, "involved_dim")->bytes == std::string("\x0a\x02\x01\x00", 4));
  // Rank 5 is data 2, model 1: the second group along data.
  CHECK(attribute(ar, "pg_name")->bytes == "data#1");
  CHECK(attribute(fields(msgs[4]), "comm_type")->varint == 7);  // REDUCE_SCATTER
  CHECK(attribute(fields(msgs[5]), "comm_type")->varint == 2);  // ALL_GATHER
  CHECK(attribute(fields(msgs[6]), "comm_type")->varint == 6);  // ALL_TO_ALL

  // The permute (shift -1 along data, open) as a send and a receive: rank 5 (data 2) sends to
  // rank 3 (data 1) and receives from rank 7 (data 3).
  const auto send = fields(msgs[7]);
  const auto recv = fields(msgs[8]);
  CHECK(field(send, 3)->varint == 5);  // COMM_SEND_NODE
  CHECK(field(recv, 3)->varint == 6);  // COMM_RECV_NODE
  CHECK(attribute(send, "comm_dst")->varint == 3);
  CHECK(attribute(recv, "comm_src")->varint == 7);
  CHECK(attribute(send, "comm_size")->varint == 2048);
  CHECK(attribute(send, "comm_tag")->varint == attribute(recv, "comm_tag")->varint);
  // The bn.stats all-reduce (explicit groups {1,3}, {5,7}): its pg_name lists the members.
  CHECK(attribute(fields(msgs[9]), "pg_name")->bytes == "ranks:5,7");
  fs::remove_all(dir);
}

TEST_CASE("the generated messages read what the wire test checks") {
  const Program p = every_field_program();
  const std::string dir = export_program(p, "parse");
  const std::string bytes = file_bytes(dir + "/tpusim.0.et");
  trace::DelimitedReader reader(bytes, "rank0");
  ChakraProtoMsg::GlobalMetadata meta;
  reader.next(meta, "metadata");
  CHECK(meta.version() == trace::kChakraSchemaVersion);
  ChakraProtoMsg::Node node;
  reader.next(node, "node");
  CHECK(node.type() == ChakraProtoMsg::COMP_NODE);
  CHECK(node.duration_micros() == 2);
  fs::remove_all(dir);
}

TEST_CASE("standard-only Chakra files import with durations as measured times") {
  const Program p = every_field_program();
  trace::ChakraExportOptions options;
  options.tpusim_attributes = false;
  const std::string dir = export_program(p, "standard", options);
  const auto imported = trace::read_chakra(dir, {});
  const Program& q = imported.trace.program;
  REQUIRE(q.ops.size() == p.ops.size());
  const auto d = durations(p);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    INFO(p.ops[i].name);
    CHECK(q.ops[i].deps == p.ops[i].deps);
    REQUIRE(q.ops[i].is_collective == p.ops[i].is_collective);
    if (!p.ops[i].is_collective) {
      // duration_micros is whole microseconds; replay times the op with it.
      CHECK(q.ops[i].compute.measured_ns == std::llround(d[i] / 1e3) * 1e3);
      CHECK(q.ops[i].compute.flops == std::llround(p.ops[i].compute.flops));
      CHECK(q.ops[i].compute.bytes_read ==
            std::llround(p.ops[i].compute.bytes_read + p.ops[i].compute.bytes_written));
      continue;
    }
    const auto& c = p.ops[i].collective;
    CHECK(q.ops[i].collective.kind == c.kind);
    CHECK(q.ops[i].collective.bytes == std::llround(c.bytes));
    CHECK(q.ops[i].collective.shift == c.shift);
    CHECK(q.ops[i].collective.wrap == c.wrap);
    // The same groups, as axes where they are the groups of some axes.
    const auto groups = [&](const CollectiveSpec& s) {
      return s.replica_groups.empty() ? trace::mesh_axis_groups(p.mesh, s.axes) : s.replica_groups;
    };
    CHECK(groups(q.ops[i].collective) == groups(c));
  }
  // The all-to-all's explicit groups are the model axis's: they import as that axis.
  CHECK(q.ops[5].collective.axes == std::vector<std::string>{"model"});
  fs::remove_all(dir);
}

TEST_CASE("ranks that run different nodes are refused with the rank, node and field") {
  const Program p = every_field_program();
  const std::string dir = export_program(p, "disagree");
  const std::string other = export_program(p, "disagree_other", {}, 2.0);
  fs::copy_file(other + "/tpusim.3.et", dir + "/tpusim.3.et", fs::copy_options::overwrite_existing);
  CHECK(import_error(dir) == dir +
                                 "/tpusim.3.et: node 0 'layer.0.qkv.fwd': duration_micros 3 "
                                 "differs from rank 0's 2; tpusim imports SPMD programs, where "
                                 "every rank runs the same nodes");
  // Rank 3 without its last node (bn.stats).
  export_program(p, "disagree");
  auto msgs = messages(file_bytes(dir + "/tpusim.3.et"));
  std::string shorter;
  for (std::size_t i = 0; i + 1 < msgs.size(); ++i) trace::append_delimited_bytes(shorter, msgs[i]);
  write_bytes(dir + "/tpusim.3.et", shorter);
  CHECK(import_error(dir) == dir +
                                 "/tpusim.3.et: node 7 'bn.stats' of rank 0 is missing; tpusim "
                                 "imports SPMD programs, where every rank runs the same nodes");
  for (const auto& d : {dir, other}) fs::remove_all(d);
}

TEST_CASE("a rank directory must hold ranks 0..N-1 of one trace and fit the mesh") {
  const Program p = every_field_program();
  const std::string dir = export_program(p, "ranks");
  fs::remove(dir + "/tpusim.2.et");
  CHECK(import_error(dir) == dir + ": rank 2 is missing (tpusim.2.et); expected ranks 0 to 6");
  write_bytes(dir + "/tpusim.2.et", file_bytes(dir + "/tpusim.1.et"));
  write_bytes(dir + "/other.0.et", "");
  CHECK_THAT(import_error(dir), Catch::Contains("holds the .et files of several traces"));
  fs::remove(dir + "/other.0.et");
  trace::ChakraImportOptions options;
  options.mesh = trace::parse_mesh_axes("data=4", "--mesh");
  CHECK(
      import_error(dir, options) ==
      "--mesh: the mesh data 4 has 4 devices but the directory holds 8 ranks; they must be equal");
  const std::string empty = temp_dir("empty");
  fs::create_directories(empty);
  CHECK(import_error(empty) == empty + ": holds no .et files; expected <prefix>.<rank>.et");
  for (const auto& d : {dir, empty}) fs::remove_all(d);
}

TEST_CASE("malformed .et files give one error naming the file, message and byte") {
  const Program p = every_field_program();
  const std::string dir = export_program(p, "malformed");
  const std::string path = dir + "/tpusim.0.et";
  const std::string good = file_bytes(path);
  write_bytes(path, good.substr(0, good.size() - 5));  // the last node cut short
  CHECK_THAT(import_error(dir), Catch::Contains("/tpusim.0.et: node 9 (byte ") &&
                                    Catch::Contains("remain (truncated file?)"));
  // A length that claims far more than the file: refused before anything is allocated.
  write_bytes(path, std::string("\xff\xff\xff\xff\x0f", 5) + "abc");
  CHECK_THAT(import_error(dir), Catch::Contains("metadata 0 (byte 0): a message of 4294967295 "
                                                "bytes is larger than the 64 MiB allowed"));
  write_bytes(path, std::string(11, '\xff'));
  CHECK_THAT(import_error(dir), Catch::Contains("message length varint longer than 10 bytes"));
  write_bytes(path, std::string("\x03\xff\xff\xff", 4));  // a field key without its value
  CHECK_THAT(import_error(dir),
             Catch::Contains("is not a valid Chakra metadata message (malformed protobuf)"));
  write_bytes(path, "");
  CHECK_THAT(import_error(dir), Catch::Contains("is empty; expected a GlobalMetadata message"));
  fs::remove_all(dir);
}

namespace {
// A one-rank trace of hand-made nodes, as another tool would write it.
std::string foreign_trace(const std::string& name, const std::vector<ChakraProtoMsg::Node>& nodes,
                          ChakraProtoMsg::GlobalMetadata meta = {}) {
  const std::string dir = temp_dir(name);
  fs::create_directories(dir);
  std::string out;
  meta.set_version("0.0.4");
  trace::append_delimited(out, meta);
  for (const auto& n : nodes) trace::append_delimited(out, n);
  write_bytes(dir + "/et.0.et", out);
  return dir;
}
ChakraProtoMsg::Node comp(std::uint64_t id, std::vector<std::uint64_t> deps, std::uint64_t us) {
  ChakraProtoMsg::Node n;
  n.set_id(id);
  n.set_name("op" + std::to_string(id));
  n.set_type(ChakraProtoMsg::COMP_NODE);
  n.set_duration_micros(us);
  for (auto d : deps) n.add_data_deps(d);
  return n;
}
}  // namespace

TEST_CASE("a foreign trace imports in dependency order - cycles and dangling deps are refused") {
  // Written out of order: 7 depends on 3 (ctrl) and 5; 5 on 3.
  auto a = comp(7, {5}, 4);
  a.add_ctrl_deps(3);
  ChakraProtoMsg::Node coll;
  coll.set_id(5);
  coll.set_name("allreduce");
  coll.set_type(ChakraProtoMsg::COMM_COLL_NODE);
  coll.add_data_deps(3);
  auto* t = coll.add_attr();
  t->set_name("comm_type");
  t->set_int64_val(0);
  auto* sz = coll.add_attr();
  sz->set_name("comm_size");
  sz->set_int64_val(1 << 20);
  const std::string dir = foreign_trace("foreign", {a, coll, comp(3, {}, 10)});
  const auto imported = trace::read_chakra(dir, {});
  const Program& q = imported.trace.program;
  REQUIRE(q.ops.size() == 3);
  CHECK(q.ops[0].name == "op3");
  CHECK(q.ops[0].compute.measured_ns == 10e3);
  CHECK(q.ops[1].name == "allreduce");
  CHECK(q.ops[1].collective.bytes == 1 << 20);
  CHECK(q.ops[1].deps == std::vector<int>{0});
  CHECK(q.ops[2].deps == std::vector<int>{0, 1});
  CHECK(q.model == "imported");
  CHECK(imported.warnings.size() == 2);  // no group, no dtype: both said

  const std::string cyclic = foreign_trace("cycle", {comp(1, {2}, 1), comp(2, {1}, 1)});
  CHECK(import_error(cyclic) ==
        cyclic +
            "/et.0.et: node 1 'op1': is part of a dependency cycle; dependencies must form a "
            "DAG");
  const std::string dangling = foreign_trace("dangling", {comp(1, {9}, 1)});
  CHECK(import_error(dangling) ==
        dangling + "/et.0.et: node 1 'op1': depends on node 9, which is not in the file");
  auto reduce = coll;
  reduce.mutable_attr(0)->set_int64_val(1);
  const std::string reduce_dir = foreign_trace("reduce", {comp(3, {}, 1), reduce});
  CHECK_THAT(import_error(reduce_dir),
             Catch::Contains("node 5 'allreduce': comm_type 1 is not a collective tpusim models"));
  auto load = comp(4, {}, 1);
  load.set_type(ChakraProtoMsg::MEM_LOAD_NODE);
  const std::string load_dir = foreign_trace("load", {load});
  CHECK_THAT(import_error(load_dir), Catch::Contains("type MEM_LOAD_NODE is not imported"));
  for (const auto& d : {dir, cyclic, dangling, reduce_dir, load_dir}) fs::remove_all(d);
}

TEST_CASE("a node depending on itself is a cycle - a batch or topology replay refuses is refused") {
  const std::string self = foreign_trace("self", {comp(1, {}, 1), comp(2, {1, 2}, 1)});
  CHECK(import_error(self) == self +
                                  "/et.0.et: node 2 'op2': depends on itself: a dependency cycle; "
                                  "dependencies must form a DAG");
  ChakraProtoMsg::GlobalMetadata negative;
  auto* batch = negative.add_attr();
  batch->set_name("tpusim_examples_per_step");
  batch->set_int64_val(-4);
  const std::string neg = foreign_trace("negative", {comp(1, {}, 1)}, negative);
  CHECK(import_error(neg) == neg +
                                 "/et.0.et: metadata: tpusim_examples_per_step -4 is not a global "
                                 "batch; expected 0 (unknown) to 2^53");
  trace::ChakraImportOptions minus;
  minus.examples_per_step = -1;
  CHECK_THAT(import_error(foreign_trace("minus", {comp(1, {}, 1)}), minus),
             Catch::StartsWith("--examples-per-step: -1 is not a global batch"));
  ChakraProtoMsg::GlobalMetadata named;
  auto* rec = named.add_attr();
  rec->set_name("tpusim_recorded_on");
  rec->set_string_val(R"({"topology": "2x2"})");
  const std::string str = foreign_trace("string_topology", {comp(1, {}, 1)}, named);
  CHECK_THAT(
      import_error(str),
      Catch::Contains("metadata tpusim_recorded_on.topology: is string; expected an object"));
  rec->set_string_val(R"({"topology": {"name": "t", "dims": [2, 2], "wrap": [false, false]}})");
  const std::string obj = foreign_trace("object_topology", {comp(1, {}, 1)}, named);
  CHECK(import_error(obj) == "(no error)");
  for (const auto& d : {self, neg, str, obj, temp_dir("minus")}) fs::remove_all(d);
}

TEST_CASE("attributes the trace reader would refuse (not finite, past its limits) are refused") {
  // Found by fuzz_chakra_reader: a NaN was imported and written as null, which replay refuses.
  auto with = [](const char* name, double v) {
    auto n = comp(1, {}, 1);
    auto* a = n.add_attr();
    a->set_name("tpusim_flops");
    a->set_double_val(name == std::string("tpusim_flops") ? v : 1);
    if (name != std::string("tpusim_flops")) {
      auto* b = n.add_attr();
      b->set_name(name);
      b->set_double_val(v);
    }
    return n;
  };
  std::vector<std::string> dirs;
  for (const auto& [name, value, what] :
       {std::tuple{"tpusim_vpu_elements", std::nan(""), "is not a finite number >= 0"},
        std::tuple{"tpusim_bytes_read", HUGE_VAL, "is not a finite number >= 0"},
        std::tuple{"tpusim_flops", 1e30, "kMaxOpFlops"},
        std::tuple{"tpusim_bytes_written", 1e16, "kMaxBytes"},
        std::tuple{"tpusim_measured_ns", 1e16, "kMaxSimulatedSeconds"}}) {
    INFO(name);
    dirs.push_back(foreign_trace(std::string("bound_") + name, {with(name, value)}));
    CHECK_THAT(import_error(dirs.back()),
               Catch::Contains(std::string("node 1 'op1': ") + name) && Catch::Contains(what));
  }
  for (const auto& d : dirs) fs::remove_all(d);
}

TEST_CASE("a rank with more nodes than the importer keeps is refused, not read into memory") {
  const std::string dir = temp_dir("many");
  fs::create_directories(dir);
  std::string out;
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version("0.0.4");
  trace::append_delimited(out, meta);
  ChakraProtoMsg::Node n;  // one message, renumbered: a million constructions took seconds
  for (std::uint64_t id = 0; id <= trace::kMaxChakraNodes; ++id) {
    n.set_id(id);
    trace::append_delimited(out, n);
  }
  write_bytes(dir + "/et.0.et", out);
  CHECK(import_error(dir) == dir + "/et.0.et: node " + std::to_string(trace::kMaxChakraNodes) +
                                 " '': more than 1048576 nodes in one rank");
  fs::remove_all(dir);
}

TEST_CASE("mutated .et files import or give a ConfigError, never anything else") {
  // A deterministic mini-fuzz (the sanitizer build runs it too): flipped bytes, cuts and
  // insertions in rank 0 and rank 1 of an exported trace.
  const Program p = every_field_program();
  const std::string dir = export_program(p, "mutate");
  const std::string rank0 = file_bytes(dir + "/tpusim.0.et");
  const std::string rank1 = file_bytes(dir + "/tpusim.1.et");
  std::mt19937 rng(14);
  int imported = 0, refused = 0;
  for (int round = 0; round < 300; ++round) {
    const bool first = round % 2 == 0;
    std::string bytes = first ? rank0 : rank1;
    std::uniform_int_distribution<std::size_t> at(0, bytes.size() - 1);
    switch (round % 3) {
      case 0:
        for (int k = 0; k < 1 + round % 4; ++k)
          bytes[at(rng)] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 1:
        bytes.resize(at(rng));
        break;
      default:
        bytes.insert(at(rng), std::string(1 + rng() % 8, static_cast<char>(rng())));
        break;
    }
    write_bytes(dir + (first ? "/tpusim.0.et" : "/tpusim.1.et"), bytes);
    try {
      trace::read_chakra(dir, {});
      ++imported;
    } catch (const ConfigError&) {
      ++refused;
    }
    write_bytes(dir + (first ? "/tpusim.0.et" : "/tpusim.1.et"), first ? rank0 : rank1);
  }
  CHECK(imported + refused == 300);
  CHECK(refused > 0);
  fs::remove_all(dir);
}
