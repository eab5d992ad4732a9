// Program -> trace JSON. Every field of the Program is written, so reading gives it back exactly
// (doubles are printed with enough digits to round-trip).
#include <cassert>

#include "core/errors.hpp"
#include "traces/format/file_bytes.hpp"
#include "traces/format/trace_format.hpp"

namespace tpusim {
namespace trace {
namespace {
using ojson = nlohmann::ordered_json;

ojson compute_to_json(const ComputeCost& c) {
  ojson j;
  j["flops"] = c.flops;
  j["bytes_read"] = c.bytes_read;
  j["bytes_written"] = c.bytes_written;
  j["vpu_elements"] = c.vpu_elements;
  j["vpu_ops_per_element"] = c.vpu_ops_per_element;
  if (c.matmul)
    j["matmul"] = ojson{
        {"batch", c.matmul->batch}, {"m", c.matmul->m}, {"k", c.matmul->k}, {"n", c.matmul->n}};
  if (c.measured_ns) j["measured_ns"] = *c.measured_ns;
  if (c.mxu_dtype != DType::BF16) j["mxu_dtype"] = to_string(c.mxu_dtype);
  return j;
}

ojson collective_to_json(const CollectiveSpec& c, const std::string& where) {
  ojson j;
  j["kind"] = to_string(c.kind);
  j["bytes"] = c.bytes;
  j["dtype"] = to_string(c.dtype);
  if (!c.replica_groups.empty() && !c.axes.empty())
    throw ConfigError(where, "has both mesh axes and explicit replica groups; a trace keeps one");
  if (c.replica_groups.empty())
    j["axes"] = c.axes;
  else
    j["replica_groups"] = c.replica_groups;
  if (c.kind == CollectiveKind::CollectivePermute || c.shift != 0 || c.wrap) {
    j["shift"] = c.shift;
    j["wrap"] = c.wrap;
  }
  return j;
}
}  // namespace

nlohmann::ordered_json program_to_json(const Program& program, const nlohmann::json& recorded_on) {
  if (!recorded_on.is_null() && !recorded_on.is_object())
    throw ConfigError("recorded_on", "trace metadata must be a JSON object");
  ojson doc;
  doc["format"] = kFormatName;
  doc["version"] = kFormatVersion;
  doc["model"] = program.model;
  doc["examples_per_step"] = program.examples_per_step;
  doc["mesh"] = ojson::array();
  for (const auto& a : program.mesh)
    doc["mesh"].push_back(ojson{{"name", a.name}, {"size", a.size}});
  if (!recorded_on.is_null()) doc["recorded_on"] = ojson::parse(recorded_on.dump());
  ojson ops = ojson::array();
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    ojson j;
    j["name"] = op.name;
    j["kind"] = op.kind;
    j["phase"] = to_string(op.phase);
    j["dtype"] = to_string(op.dtype);
    j["shapes"] = op.shapes;
    j["deps"] = op.deps;
    if (op.is_collective)
      j["collective"] = collective_to_json(op.collective, "ops[" + std::to_string(i) + "]");
    else
      j["compute"] = compute_to_json(op.compute);
    ops.push_back(std::move(j));
  }
  doc["ops"] = std::move(ops);
  return doc;
}

TraceFile read_trace_file(const std::string& path) {
  return parse_trace(read_file_maybe_gzip(path), path);
}

TraceFile parse_trace(const std::string& bytes, const std::string& name) {
  const std::string text = is_gzip(bytes) ? gunzip(bytes, name) : bytes;
  return trace_from_json(parse_json_text(text, name), name);
}

}  // namespace trace

void write_trace(const Program& program, const std::string& path,
                 const nlohmann::json& recorded_on) {
  // One line per top-level field and per op: readable, small, and diffs show changed ops.
  const auto doc = trace::program_to_json(program, recorded_on);
  std::string text = "{";
  bool first = true;
  for (const auto& [key, value] : doc.items()) {
    text += first ? "\n " : ",\n ";
    first = false;
    text += nlohmann::json(key).dump() + ": ";
    if (key != "ops") {
      text += value.dump();
      continue;
    }
    text += "[";
    for (std::size_t i = 0; i < value.size(); ++i) text += (i ? ",\n  " : "\n  ") + value[i].dump();
    text += value.empty() ? "]" : "\n ]";
  }
  trace::write_file_maybe_gzip(path, text + "\n}\n");
}

Program read_trace(const std::string& path) { return trace::read_trace_file(path).program; }

}  // namespace tpusim
