#pragma once
// A canonical text of a Program for regression checks: one line for the Program's own fields,
// one per resident buffer and one per op, each holding every field the partitioner or the
// compiler sets. Numbers are written with `digits` significant digits.
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "models/program.hpp"

namespace tpusim::test {

class ProgramText {
 public:
  explicit ProgramText(int digits) : digits_(digits) {}

  std::vector<std::string> lines(const Program& p) const {
    std::vector<std::string> out;
    std::ostringstream head;
    head << "program " << p.model << " mesh";
    for (const auto& a : p.mesh) head << " " << a.name << ":" << a.size;
    head << " examples " << p.examples_per_step << " infeed " << num(p.infeed_bytes_per_example)
         << " memory " << p.has_memory << " model_flops " << num(p.model_flops) << " tokens "
         << p.tokens_per_example;
    out.push_back(head.str());
    for (const auto& r : p.resident)
      out.push_back("resident " + r.name + " " + to_string(r.cls) + " " + to_string(r.dtype) + " " +
                    num(r.bytes));
    for (const auto& op : p.ops) out.push_back(op_line(op));
    return out;
  }

  std::string op_line(const Op& op) const {
    std::ostringstream s;
    s << op.name << " kind " << op.kind << " phase " << to_string(op.phase) << " dtype "
      << to_string(op.dtype) << " shapes" << shapes(op.shapes) << " deps" << ints(op.deps);
    if (op.is_collective) {
      const CollectiveSpec& c = op.collective;
      s << " collective " << to_string(c.kind) << " bytes " << num(c.bytes) << " "
        << to_string(c.dtype) << " axes";
      for (const auto& a : c.axes) s << " " << a;
      s << " groups" << shapes(c.replica_groups) << " shift " << c.shift << " wrap " << c.wrap;
    } else {
      const ComputeCost& c = op.compute;
      s << " compute";
      if (c.matmul)
        s << " matmul " << c.matmul->batch << "x" << c.matmul->m << "x" << c.matmul->k << "x"
          << c.matmul->n;
      s << " vpu " << num(c.vpu_elements) << "*" << num(c.vpu_ops_per_element) << " read "
        << num(c.bytes_read) << " written " << num(c.bytes_written) << " flops " << num(c.flops);
      if (c.measured_ns) s << " measured " << num(*c.measured_ns);
    }
    s << " out " << output(op.output) << " reads";
    for (const auto& r : op.reads) s << " " << r.producer << ":" << num(r.bytes);
    s << " out_shape" << ints(op.out_shape) << " map " << op.feature_map << " role "
      << static_cast<int>(op.fusion_role) << " more";
    for (const auto& o : op.more_outputs) s << " " << output(o);
    s << " fused";
    for (const auto& f : op.fused) s << " " << f;
    s << " padding " << num(op.padding_bytes) << " cmem " << num(op.cmem_bytes);
    return s.str();
  }

 private:
  std::string num(double x) const {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.*g", digits_, x);
    return buf;
  }
  template <class T>
  static std::string ints(const std::vector<T>& v) {
    std::string s;
    for (const auto& x : v) s += " " + std::to_string(x);
    return s;
  }
  template <class T>
  static std::string shapes(const std::vector<std::vector<T>>& v) {
    std::string s;
    for (const auto& x : v) s += " [" + ints(x) + " ]";
    return s;
  }
  std::string output(const OpOutput& o) const {
    return num(o.bytes) + " " + to_string(o.dtype) + " " + to_string(o.cls) + " last " +
           std::to_string(o.last_use);
  }

  int digits_;
};

/// FNV-1a, 64 bits, over the lines (each followed by a newline).
inline std::uint64_t fnv1a(const std::vector<std::string>& lines, std::size_t first = 0,
                           std::size_t end = static_cast<std::size_t>(-1)) {
  std::uint64_t h = 1469598103934665603ULL;
  for (std::size_t i = first; i < lines.size() && i < end; ++i) {
    for (unsigned char c : lines[i]) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ '\n') * 1099511628211ULL;
  }
  return h;
}

}  // namespace tpusim::test
