#include "traces/format/program_file.hpp"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <type_traits>

#include "core/errors.hpp"

namespace tpusim {
namespace {

constexpr char kMagic[] = "tpusim Program 1\n";
/// The fewest bytes an op takes in the file (its fixed-size fields and empty vectors).
constexpr std::size_t kOpMinBytes = 150;

// Every field of these is written below. A field added to one of them changes its size: write
// it (and read it) below, then update the size here.
static_assert(sizeof(MatmulShape) == 32);
static_assert(sizeof(ComputeCost) == 104);
static_assert(sizeof(CollectiveSpec) == 80);
static_assert(sizeof(OpOutput) == 24);
static_assert(sizeof(DataRead) == 16);
static_assert(sizeof(Op) == 456);
static_assert(sizeof(ResidentBuffer) == 48);
static_assert(sizeof(MeshAxis) == 40);
static_assert(sizeof(PipelineUnit) == 16);
static_assert(sizeof(PipelineInfo) == 72);
static_assert(sizeof(Program) == 216);

class Writer {
 public:
  template <class T>
  void raw(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void u8(int v) { raw(static_cast<std::uint8_t>(v)); }
  void i64(std::int64_t v) { raw(v); }
  void f64(double v) { raw(v); }
  void count(std::size_t n) { raw(static_cast<std::uint64_t>(n)); }
  void str(const std::string& s) {
    count(s.size());
    out_.append(s);
  }
  template <class T, class F>
  void vec(const std::vector<T>& v, F each) {
    count(v.size());
    for (const T& x : v) each(x);
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(std::string bytes, std::string option, std::string path)
      : in_(std::move(bytes)), option_(std::move(option)), path_(std::move(path)) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(option_, path_ + ": " + what +
                                   "; allowed: a Program file `tpusim plan` "
                                   "wrote for this study with this tpusim");
  }
  template <class T>
  T raw() {
    T v;
    if (in_.size() - pos_ < sizeof v) fail("cut short");
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  int u8(int last) {
    const int v = raw<std::uint8_t>();
    if (v > last) fail("an enumeration out of range");
    return v;
  }
  bool flag() { return u8(1) == 1; }
  std::int64_t i64() { return raw<std::int64_t>(); }
  int i32() {
    const std::int64_t v = i64();
    if (v < INT32_MIN || v > INT32_MAX) fail("an integer out of range");
    return static_cast<int>(v);
  }
  double f64() { return raw<double>(); }
  /// A count of items of at least `min_bytes` each: never more than the rest of the file holds.
  std::size_t count(std::size_t min_bytes = 1) {
    const std::uint64_t n = raw<std::uint64_t>();
    if (n > (in_.size() - pos_) / min_bytes) fail("a count larger than the file");
    return static_cast<std::size_t>(n);
  }
  std::string str() {
    const std::size_t n = count();
    std::string s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  /// A vector whose items take at least `min_bytes` each in the file: what it allocates is
  /// bounded by the file's size.
  template <class T, class F>
  void vec(std::vector<T>& v, F each, std::size_t min_bytes) {
    const std::size_t n = count(min_bytes);
    v.resize(n);
    for (T& x : v) each(x);
  }
  bool at_end() const { return pos_ == in_.size(); }

 private:
  std::string in_;
  std::size_t pos_ = 0;
  std::string option_, path_;
};

void write_output(Writer& w, const OpOutput& o) {
  w.f64(o.bytes);
  w.u8(static_cast<int>(o.dtype));
  w.u8(static_cast<int>(o.cls));
  w.i64(o.last_use);
}

void read_output(Reader& r, OpOutput& o) {
  o.bytes = r.f64();
  o.dtype = static_cast<DType>(r.u8(static_cast<int>(DType::F8)));
  o.cls = static_cast<MemoryClass>(r.u8(kMemoryClasses - 1));
  o.last_use = r.i32();
}

void write_op(Writer& w, const Op& op) {
  w.str(op.name);
  w.str(op.kind);
  w.u8(static_cast<int>(op.phase));
  w.u8(op.is_collective);
  const ComputeCost& c = op.compute;
  w.u8(c.matmul.has_value());
  if (c.matmul) {
    for (std::int64_t v : {c.matmul->batch, c.matmul->m, c.matmul->k, c.matmul->n}) w.i64(v);
  }
  for (double v : {c.vpu_elements, c.vpu_ops_per_element, c.bytes_read, c.bytes_written, c.flops})
    w.f64(v);
  w.u8(c.measured_ns.has_value());
  if (c.measured_ns) w.f64(*c.measured_ns);
  w.u8(static_cast<int>(c.mxu_dtype));
  const CollectiveSpec& k = op.collective;
  w.u8(static_cast<int>(k.kind));
  w.f64(k.bytes);
  w.u8(static_cast<int>(k.dtype));
  w.vec(k.axes, [&](const std::string& a) { w.str(a); });
  w.vec(k.replica_groups, [&](const std::vector<int>& g) { w.vec(g, [&](int m) { w.i64(m); }); });
  w.i64(k.shift);
  w.u8(k.wrap);
  w.u8(static_cast<int>(op.dtype));
  w.vec(op.shapes,
        [&](const std::vector<std::int64_t>& s) { w.vec(s, [&](std::int64_t d) { w.i64(d); }); });
  w.vec(op.deps, [&](int d) { w.i64(d); });
  write_output(w, op.output);
  w.vec(op.reads, [&](const DataRead& d) {
    w.i64(d.producer);
    w.f64(d.bytes);
  });
  w.vec(op.out_shape, [&](std::int64_t d) { w.i64(d); });
  w.u8(op.feature_map);
  w.u8(static_cast<int>(op.fusion_role));
  w.vec(op.more_outputs, [&](const OpOutput& o) { write_output(w, o); });
  w.vec(op.fused, [&](const std::string& f) { w.str(f); });
  w.f64(op.padding_bytes);
  w.f64(op.cmem_bytes);
}

void read_op(Reader& r, Op& op) {
  op.name = r.str();
  op.kind = r.str();
  op.phase = static_cast<Phase>(r.u8(static_cast<int>(Phase::Other)));
  op.is_collective = r.flag();
  ComputeCost& c = op.compute;
  if (r.flag()) {
    MatmulShape m;
    m.batch = r.i64();
    m.m = r.i64();
    m.k = r.i64();
    m.n = r.i64();
    c.matmul = m;
  }
  for (double* v :
       {&c.vpu_elements, &c.vpu_ops_per_element, &c.bytes_read, &c.bytes_written, &c.flops})
    *v = r.f64();
  if (r.flag()) c.measured_ns = r.f64();
  c.mxu_dtype = static_cast<DType>(r.u8(static_cast<int>(DType::F8)));
  CollectiveSpec& k = op.collective;
  k.kind = static_cast<CollectiveKind>(r.u8(static_cast<int>(CollectiveKind::CollectivePermute)));
  k.bytes = r.f64();
  k.dtype = static_cast<DType>(r.u8(static_cast<int>(DType::F8)));
  r.vec(
      k.axes, [&](std::string& a) { a = r.str(); }, 8);
  r.vec(
      k.replica_groups,
      [&](std::vector<int>& g) {
        r.vec(
            g, [&](int& m) { m = r.i32(); }, 8);
      },
      8);
  k.shift = r.i32();
  k.wrap = r.flag();
  op.dtype = static_cast<DType>(r.u8(static_cast<int>(DType::F8)));
  r.vec(
      op.shapes,
      [&](std::vector<std::int64_t>& s) {
        r.vec(
            s, [&](std::int64_t& d) { d = r.i64(); }, 8);
      },
      8);
  r.vec(
      op.deps, [&](int& d) { d = r.i32(); }, 8);
  read_output(r, op.output);
  r.vec(
      op.reads,
      [&](DataRead& d) {
        d.producer = r.i32();
        d.bytes = r.f64();
      },
      16);
  r.vec(
      op.out_shape, [&](std::int64_t& d) { d = r.i64(); }, 8);
  op.feature_map = r.flag();
  op.fusion_role = static_cast<FusionRole>(r.u8(static_cast<int>(FusionRole::Reduction)));
  r.vec(
      op.more_outputs, [&](OpOutput& o) { read_output(r, o); }, 18);
  r.vec(
      op.fused, [&](std::string& f) { f = r.str(); }, 8);
  op.padding_bytes = r.f64();
  op.cmem_bytes = r.f64();
}

/// What Program::validate does not check of a Program read back: every index in range.
void check_indices(Reader& r, const Program& p) {
  const auto n = static_cast<std::int64_t>(p.ops.size());
  auto in_range = [&](std::int64_t i) { return i >= 0 && i < n; };
  for (const Op& op : p.ops) {
    for (const DataRead& d : op.reads)
      if (!in_range(d.producer)) r.fail("an op reads from an op that does not exist");
    for (int d : op.deps)
      if (!in_range(d)) r.fail("an op depends on an op that does not exist");
  }
}

/// The main executable's GNU build ID as hex, from its PT_NOTE segments; "" without one.
int find_build_id(dl_phdr_info* info, std::size_t, void* out) {
  auto& id = *static_cast<std::string*>(out);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((n->n_namesz + 3) & ~3u);
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static const char kHex[] = "0123456789abcdef";
        for (ElfW(Word) k = 0; k < n->n_descsz; ++k) {
          const auto b = static_cast<unsigned char>(desc[k]);
          id += kHex[b >> 4];
          id += kHex[b & 15];
        }
        return 1;
      }
      p = desc + ((n->n_descsz + 3) & ~3u);
    }
  }
  return 1;  // the first object is the executable: stop there
}

}  // namespace

std::string program_file_tag(const std::string& study_hash) {
  static const std::string build = [] {
    std::string id;
    dl_iterate_phdr(find_build_id, &id);
    return id;
  }();
  return study_hash + " built by " + (build.empty() ? "an unidentified build" : build);
}

void write_program_file(const std::string& path, const Program& p, const std::string& tag) {
  Writer w;
  w.str(kMagic);
  w.str(tag);
  w.str(p.model);
  w.vec(p.mesh, [&](const MeshAxis& a) {
    w.str(a.name);
    w.i64(a.size);
  });
  w.i64(p.examples_per_step);
  w.f64(p.infeed_bytes_per_example);
  w.vec(p.ops, [&](const Op& op) { write_op(w, op); });
  w.vec(p.resident, [&](const ResidentBuffer& b) {
    w.str(b.name);
    w.u8(static_cast<int>(b.cls));
    w.u8(static_cast<int>(b.dtype));
    w.f64(b.bytes);
  });
  w.u8(p.has_memory);
  w.f64(p.model_flops);
  w.i64(p.tokens_per_example);
  const PipelineInfo& q = p.pipeline;
  for (int v : {q.stages, q.microbatches, q.repeats}) w.i64(v);
  w.str(q.schedule);
  w.vec(q.units, [&](const PipelineUnit& u) {
    w.i64(u.first_op);
    w.i64(u.last_op);
    w.u8(u.forward);
    w.i64(u.iteration);
  });
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(w.bytes().data(), static_cast<std::streamsize>(w.bytes().size()));
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

Program read_program_file(const std::string& path, const std::string& tag,
                          const std::string& option) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const std::streamoff size = in ? static_cast<std::streamoff>(in.tellg()) : -1;
  std::string bytes(size > 0 ? static_cast<std::size_t>(size) : 0, '\0');
  if (size < 0 || !in.seekg(0) || !in.read(bytes.data(), size))
    throw ConfigError(option, path + ": cannot be read; allowed: a readable file");
  Writer header;
  header.str(kMagic);
  const bool magic = bytes.compare(0, header.bytes().size(), header.bytes()) == 0;
  Reader r(std::move(bytes), option, path);
  if (!magic) r.fail("not a Program file");
  r.str();
  if (r.str() != tag) r.fail("written for another study or by another tpusim build");
  Program p;
  p.model = r.str();
  r.vec(
      p.mesh,
      [&](MeshAxis& a) {
        a.name = r.str();
        a.size = r.i32();
      },
      16);
  p.examples_per_step = r.i64();
  p.infeed_bytes_per_example = r.f64();
  r.vec(
      p.ops, [&](Op& op) { read_op(r, op); }, kOpMinBytes);
  r.vec(
      p.resident,
      [&](ResidentBuffer& b) {
        b.name = r.str();
        b.cls = static_cast<MemoryClass>(r.u8(kMemoryClasses - 1));
        b.dtype = static_cast<DType>(r.u8(static_cast<int>(DType::F8)));
        b.bytes = r.f64();
      },
      18);
  p.has_memory = r.flag();
  p.model_flops = r.f64();
  p.tokens_per_example = r.i64();
  PipelineInfo& q = p.pipeline;
  q.stages = r.i32();
  q.microbatches = r.i32();
  q.repeats = r.i32();
  q.schedule = r.str();
  r.vec(
      q.units,
      [&](PipelineUnit& u) {
        u.first_op = r.i32();
        u.last_op = r.i32();
        u.forward = r.flag();
        u.iteration = r.i32();
      },
      25);
  if (!r.at_end()) r.fail("bytes after the Program");
  check_indices(r, p);
  try {
    p.validate();
  } catch (const ConfigError& e) {
    r.fail("an inconsistent Program (" + e.problems().front().line() + ")");
  }
  return p;
}

}  // namespace tpusim
