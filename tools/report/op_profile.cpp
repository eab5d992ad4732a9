#include "tools/report/op_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>

#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "sim/core/tensor_core_cost.hpp"
#include "tools/report/run_report.hpp"

namespace tpusim::cli {
namespace {

namespace fs = std::filesystem;

bool is_number(const std::string& part) {
  return !part.empty() &&
         std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c); });
}

double safe_div(double a, double b) { return b > 0 ? a / b : 0.0; }

/// A compute op: its time, FLOPs, HBM bytes, rates, and the part of the TensorCore cost model
/// (MXU, vector unit, HBM traffic, the launch overhead) that sets its time; or "waiting" when
/// the core waited longer for the op's inputs (a collective, an infeed batch) than it ran.
nlohmann::json compute_op_json(const Op& op, int index, double time_ms, double waiting_ms,
                               const HardwareSpec& hw) {
  const OpDemand d = op_demand(hw, op.compute, Duration::ns(time_ms * 1e6));
  const double mxu = d.mxu.ms(), vpu = d.vpu.ms(), hbm = (d.hbm + d.hbm_latency).ms();
  const double overhead = std::min(hw.op_overhead.ms(), time_ms);
  std::string bound = "MXU";
  double largest = mxu;
  if (vpu > largest) bound = "vector", largest = vpu;
  if (hbm > largest) bound = "HBM", largest = hbm;
  if (overhead >= largest) bound = "overhead";
  const std::string resource = bound;
  if (waiting_ms > time_ms) bound = "waiting";
  const double bytes = op.compute.bytes_read + op.compute.bytes_written;
  const double s = time_ms * 1e-3;
  nlohmann::json j = {{"index", index},
                      {"name", op.name},
                      {"kind", op.kind},
                      {"phase", to_string(op.phase)},
                      {"layer", layer_of(op.fused.empty() ? op.name : op.fused.front())},
                      {"type", "compute"},
                      {"time_ms", time_ms},
                      {"flops", op.compute.flops},
                      {"hbm_bytes", bytes},
                      {"tflop_per_s", safe_div(op.compute.flops, s) * 1e-12},
                      {"hbm_GBps", safe_div(bytes, s) * 1e-9},
                      {"flop_per_byte", safe_div(op.compute.flops, bytes)},
                      {"mxu_ms", mxu},
                      {"vector_ms", vpu},
                      {"hbm_ms", hbm},
                      {"overhead_ms", overhead},
                      {"waiting_ms", waiting_ms},
                      {"bound", bound},
                      {"resource", resource},
                      {"measured", op.compute.measured_ns.has_value()}};
  if (!op.fused.empty()) j["members"] = op.fused;
  return j;
}

/// A collective: its time in flight (the longest group), the bytes of one core's buffer and
/// the rate they moved at (the algorithm bandwidth).
nlohmann::json collective_op_json(const Op& op, int index, double time_ms,
                                  const CollectiveOpStats* st) {
  std::string axes;
  for (const auto& a : op.collective.axes) axes += (axes.empty() ? "" : "+") + a;
  nlohmann::json j = {{"index", index},
                      {"name", op.name},
                      {"kind", op.kind},
                      {"phase", to_string(op.phase)},
                      {"layer", layer_of(op.name)},
                      {"type", "collective"},
                      {"time_ms", time_ms},
                      {"flops", 0.0},
                      {"bytes", op.collective.bytes},
                      {"GBps", safe_div(op.collective.bytes, time_ms * 1e-3) * 1e-9},
                      {"axes", axes.empty() ? "replica_groups" : axes},
                      {"bound", "ICI"}};
  if (st) {
    j["algorithm"] = st->algorithm;
    j["groups"] = st->groups;
  }
  return j;
}

nlohmann::json ops_json(const Program& program, const SimReport& r, const HardwareSpec& hw) {
  std::vector<double> time_ms(program.ops.size(), 0.0), waiting_ms(program.ops.size(), 0.0);
  for (const auto& t : r.top_ops) time_ms[t.index] = t.time_ms, waiting_ms[t.index] = t.waiting_ms;
  nlohmann::json ops = nlohmann::json::array();
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const int index = static_cast<int>(i);
    if (op.is_collective) {
      auto it = r.collectives.find(index);
      ops.push_back(collective_op_json(op, index, time_ms[i],
                                       it == r.collectives.end() ? nullptr : &it->second));
    } else {
      ops.push_back(compute_op_json(op, index, time_ms[i], waiting_ms[i], hw));
    }
  }
  return ops;
}

/// What bounds an op's own time (a compute op's resource even when it waited longer before it
/// started: the wait is not part of its time).
std::string bound_of_time(const nlohmann::json& op) {
  return op.value("resource", op["bound"].get<std::string>());
}

/// Per layer: the ops' time, FLOPs, bytes and count, the compute time by bound and the bound
/// that holds most of the layer's time; longest first.
nlohmann::json layers_json(const nlohmann::json& ops) {
  std::map<std::string, nlohmann::json> by_layer;
  std::vector<std::string> order;
  for (const auto& op : ops) {
    const std::string layer = op["layer"];
    auto [it, fresh] = by_layer.try_emplace(layer, nlohmann::json::object());
    auto& l = it->second;
    if (fresh) {
      order.push_back(layer);
      l = {{"layer", layer},       {"ops", 0},
           {"time_ms", 0.0},       {"compute_ms", 0.0},
           {"flops", 0.0},         {"hbm_bytes", 0.0},
           {"collective_ms", 0.0}, {"by_bound_ms", nlohmann::json::object()}};
    }
    const double t = op["time_ms"];
    l["ops"] = l["ops"].get<int>() + 1;
    l["time_ms"] = l["time_ms"].get<double>() + t;
    l["flops"] = l["flops"].get<double>() + op["flops"].get<double>();
    if (op["type"] == "compute") {
      l["compute_ms"] = l["compute_ms"].get<double>() + t;
      l["hbm_bytes"] = l["hbm_bytes"].get<double>() + op["hbm_bytes"].get<double>();
    } else {
      l["collective_ms"] = l["collective_ms"].get<double>() + t;
    }
    auto& b = l["by_bound_ms"][bound_of_time(op)];
    b = (b.is_null() ? 0.0 : b.get<double>()) + t;
  }
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& name : order) {
    auto& l = by_layer[name];
    const double s = l["compute_ms"].get<double>() * 1e-3;
    l["tflop_per_s"] = safe_div(l["flops"].get<double>(), s) * 1e-12;
    l["hbm_GBps"] = safe_div(l["hbm_bytes"].get<double>(), s) * 1e-9;
    std::string bound;
    double most = -1;
    for (const auto& [k, v] : l["by_bound_ms"].items())
      if (v.get<double>() > most) bound = k, most = v.get<double>();
    l["bound"] = bound;
    layers.push_back(l);
  }
  std::stable_sort(layers.begin(), layers.end(), [](const auto& a, const auto& b) {
    return a["time_ms"].template get<double>() > b["time_ms"].template get<double>();
  });
  return layers;
}

/// The chip's roofs per core: the MXUs' peak FLOP/s, the vector unit's (one FLOP per element
/// op), HBM's peak and achievable bandwidth, one ICI link.
nlohmann::json roofs_json(const HardwareSpec& hw) {
  const double peak = hw.peak_flops_per_core();
  const double hbm = hw.hbm_bandwidth_per_core.bytes_per_s();
  return {{"mxu_tflop_per_s", peak * 1e-12},
          {"vector_tflop_per_s",
           static_cast<double>(hw.vpu_lanes) * hw.vpu_sublanes * hw.clock_hz * 1e-12},
          {"hbm_GBps", hbm * 1e-9},
          {"hbm_achievable_GBps", hbm * hw.hbm_efficiency * 1e-9},
          {"mxu_efficiency", hw.mxu_efficiency},
          {"ridge_flop_per_byte", safe_div(peak, hbm)},
          {"ici_link_GBps", hw.ici_bandwidth.GBps()}};
}

/// The step of the core that finished last, in parts that add up to the step time: its compute
/// ops by bound, compute slowed by collectives holding its resources, exposed communication
/// (waiting for a group's other cores, the rest on the network) and the time it did neither.
nlohmann::json step_json(const nlohmann::json& ops, const SimReport& r) {
  std::map<std::string, double> by_bound;
  double compute_ops = 0;
  for (const auto& op : ops)
    if (op["type"] == "compute") {
      by_bound[bound_of_time(op)] += op["time_ms"].get<double>();
      compute_ops += op["time_ms"].get<double>();
    }
  const double step = r.step_time.ms(), exposed = r.exposed_communication.ms();
  const double waiting = std::min(r.comm_split.waiting.ms(), exposed);
  nlohmann::json parts = nlohmann::json::array();
  // A difference of sums that should be zero is written as zero (not 1e-15 ms of rounding).
  auto add = [&parts, step](const std::string& part, const std::string& what, double ms) {
    parts.push_back(
        {{"part", part}, {"what", what}, {"time_ms", std::abs(ms) < 1e-9 * step ? 0.0 : ms}});
  };
  add("MXU", "compute ops bound by the MXUs", by_bound["MXU"]);
  add("vector", "compute ops bound by the vector unit", by_bound["vector"]);
  add("HBM", "compute ops bound by HBM traffic", by_bound["HBM"]);
  add("overhead", "compute ops bound by their launch overhead", by_bound["overhead"]);
  add("other compute", "compute time outside the ops' own times (slow chips, infeed)",
      r.compute.ms() - r.compute_slowdown.ms() - compute_ops);
  add("slowdown", "compute slowed by collectives holding the core's HBM port or vector unit",
      r.compute_slowdown.ms());
  add("waiting", "exposed: waiting for the other cores of a collective's group", waiting);
  add("ICI", "exposed: collectives moving data and synchronising", exposed - waiting);
  add("idle", "neither computing nor in a collective (waiting for input)",
      std::max(0.0, step - r.compute.ms() - exposed));
  return {{"step_time_ms", step},
          {"compute_ms", r.compute.ms()},
          {"communication_ms", r.communication.ms()},
          {"exposed_communication_ms", exposed},
          {"overlapped_communication_ms", r.communication.ms() - exposed},
          {"mxu_utilization", r.mxu_utilization},
          {"parts", parts}};
}

}  // namespace

std::string layer_of(const std::string& op_name) {
  std::string layer, part;
  for (std::size_t i = 0; i <= op_name.size(); ++i) {
    if (i < op_name.size() && op_name[i] != '.') {
      part += op_name[i];
      continue;
    }
    layer += (layer.empty() ? "" : ".") + part;
    if (is_number(part)) return layer;
    part.clear();
  }
  const auto dot = op_name.find('.');
  return dot == std::string::npos ? op_name : op_name.substr(0, dot);
}

nlohmann::json op_profile_json(const Study& study, const Program& program, const SimReport& r) {
  const nlohmann::json ops = ops_json(program, r, study.hardware);
  int roofline = 0;
  for (const auto& op : ops)
    if (op["type"] == "compute" && op["flops"].get<double>() > 0 &&
        op["hbm_bytes"].get<double>() > 0)
      ++roofline;
  return {{"schema_version", kProfileSchemaVersion},
          {"tpusim_version", TPUSIM_VERSION},
          {"study", study.source},
          {"model", program.model},
          {"layout", layout_string(program, study.config)},
          {"hardware", study.hardware.name},
          {"chips", r.chips},
          {"cores", r.cores},
          {"global_batch", program.examples_per_step},
          {"simulation", r.symmetry},
          {"roofs", roofs_json(study.hardware)},
          {"step", step_json(ops, r)},
          {"roofline_ops", roofline},
          {"ops", ops},
          {"layers", layers_json(ops)}};
}

void write_op_profile(const std::string& dir, const nlohmann::json& profile,
                      const std::string& option) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConfigError(option + " " + dir, "cannot create the directory: " + ec.message());
  write_output_file(dir + "/profile.json", profile.dump(2) + "\n");
  write_output_file(dir + "/profile.html", op_profile_html(profile));
}

void print_op_profile(std::ostream& out, const nlohmann::json& p, int top) {
  const auto& step = p["step"];
  out << fmt::format("{} on {} chips ({}), {}: step {:.3f} ms\n", p["model"].get<std::string>(),
                     p["chips"].get<int>(), p["hardware"].get<std::string>(),
                     p["layout"].get<std::string>(), step["step_time_ms"].get<double>());
  out << "  the step, by what bounds it:\n";
  for (const auto& part : step["parts"])
    if (part["time_ms"].get<double>() != 0)
      out << fmt::format(
          "    {:10.3f} ms {:5.1f} %  {:<9} {}\n", part["time_ms"].get<double>(),
          100 * safe_div(part["time_ms"].get<double>(), step["step_time_ms"].get<double>()),
          part["part"].get<std::string>(), part["what"].get<std::string>());
  std::vector<const nlohmann::json*> ops;
  for (const auto& op : p["ops"]) ops.push_back(&op);
  std::stable_sort(ops.begin(), ops.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
    return (*a)["time_ms"].get<double>() > (*b)["time_ms"].get<double>();
  });
  out << fmt::format("  top {} ops by time (per core): time, TFLOP/s, GB/s, bound\n",
                     std::min<std::size_t>(top, ops.size()));
  for (std::size_t i = 0; i < ops.size() && i < static_cast<std::size_t>(top); ++i) {
    const auto& op = *ops[i];
    const bool coll = op["type"] == "collective";
    out << fmt::format("    {:10.3f} ms {:8.2f} {:9.1f}  {:<8} {}\n", op["time_ms"].get<double>(),
                       op["flops"].get<double>() > 0 ? op["tflop_per_s"].get<double>() : 0.0,
                       coll ? op["GBps"].get<double>() : op["hbm_GBps"].get<double>(),
                       op["bound"].get<std::string>(), op["name"].get<std::string>());
  }
}

}  // namespace tpusim::cli
