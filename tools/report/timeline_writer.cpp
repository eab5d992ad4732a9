#include "tools/report/timeline_writer.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/output_file.hpp"
#include "traces/format/file_bytes.hpp"

namespace tpusim::cli {
namespace {

bool overlap(Duration a0, Duration a1, Duration b0, Duration b1) { return a0 < b1 && b0 < a1; }

std::string group_text(const CollectiveSpec& c) {
  if (!c.replica_groups.empty())
    return std::to_string(c.replica_groups.size()) + " replica groups of " +
           std::to_string(c.replica_groups.front().size());
  std::string axes;
  for (const auto& a : c.axes) axes += (axes.empty() ? "" : ",") + a;
  return "mesh axes " + (axes.empty() ? std::string("(none)") : axes);
}

}  // namespace

TimelineWriter::TimelineWriter(const Program& program, int devices_per_chip, int cores,
                               std::vector<int> traced_cores)
    : program_(program),
      devices_per_chip_(devices_per_chip),
      cores_(cores),
      traced_cores_(std::move(traced_cores)) {}

void check_timeline_size(std::size_t cores, std::size_t ops, const std::string& where) {
  const double spans = static_cast<double>(cores) * static_cast<double>(ops);
  if (spans > kMaxTimelineSpans)
    throw ConfigError(where, "a timeline of " + std::to_string(cores) + " cores x " +
                                 std::to_string(ops) + " ops is " + format_number(spans) +
                                 " spans, " +
                                 past_limit(kMaxTimelineSpans, "spans", "kMaxTimelineSpans") +
                                 "; allowed: fewer traced cores (--timeline-all-up-to) or ops");
}

void TimelineWriter::span(int core, int op_index, const std::string& name,
                          const std::string& category, Duration start, Duration end) {
  // The check before the simulation counts one span per op; collectives played in several
  // pieces can add more: the bound holds here whatever the estimate said.
  if (static_cast<double>(spans_.size()) >= kMaxTimelineSpans)
    throw ConfigError("--timeline",
                      "more than " + format_number(kMaxTimelineSpans) + " spans, " +
                          past_limit(kMaxTimelineSpans, "spans", "kMaxTimelineSpans") +
                          "; allowed: fewer traced cores or ops");
  spans_.push_back({core, op_index, name, category, start, end});
}

void TimelineWriter::counter(int chip, const std::string& track, const std::string& name,
                             Duration at, double value) {
  samples_.push_back({chip, track, name, at, value});
}

void TimelineWriter::live_bytes_counters(const std::vector<double>& live_bytes) {
  if (live_bytes.size() != program_.ops.size()) return;
  std::vector<Sample> added;
  for (const auto& s : spans_)
    if (s.op >= 0 && s.op < static_cast<int>(live_bytes.size()))
      added.push_back({s.core / devices_per_chip_, "HBM live GiB, core " + std::to_string(s.core),
                       "GiB", s.start, live_bytes[static_cast<std::size_t>(s.op)] / 1073741824.0});
  samples_.insert(samples_.end(), added.begin(), added.end());
}

nlohmann::json TimelineWriter::args_of(const Span& s) const {
  nlohmann::json a{{"core", s.core}};
  if (s.op < 0 || s.op >= static_cast<int>(program_.ops.size())) return a;
  const Op& op = program_.ops[static_cast<std::size_t>(s.op)];
  a["op_index"] = s.op;
  a["phase"] = to_string(op.phase);
  a["dtype"] = to_string(op.dtype);
  if (op.is_collective) {
    const CollectiveSpec& c = op.collective;
    a["collective"] = to_string(c.kind);
    a["bytes_per_core"] = c.bytes;
    a["group"] = group_text(c);
    if (auto st = stats_.find(s.op); st != stats_.end()) {
      a["algorithm"] = st->second.algorithm;
      a["groups"] = st->second.groups;
    }
    if (c.kind == CollectiveKind::CollectivePermute) a["shift"] = c.shift;
    return a;
  }
  const ComputeCost& c = op.compute;
  a["flops"] = c.flops;
  a["hbm_bytes_read"] = c.bytes_read;
  a["hbm_bytes_written"] = c.bytes_written;
  if (c.matmul) a["matmul_bmkn"] = {c.matmul->batch, c.matmul->m, c.matmul->k, c.matmul->n};
  if (c.vpu_elements > 0) a["vector_elements"] = c.vpu_elements;
  if (c.measured_ns) a["measured_ns"] = *c.measured_ns;
  if (!op.shapes.empty()) a["shapes"] = op.shapes;
  if (!op.fused.empty()) a["fusion_members"] = op.fused;
  if (op.padding_bytes > 0) a["tile_padding_bytes"] = op.padding_bytes;
  if (op.cmem_bytes > 0) a["cmem_bytes"] = op.cmem_bytes;
  return a;
}

namespace {

/// The metadata events naming (and ordering) each chip's process and each (core, lane) thread.
void add_track_names(nlohmann::json& events, const std::set<int>& chips,
                     const std::map<std::pair<int, int>, int>& tid, int devices_per_chip) {
  for (int chip : chips) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", chip},
                      {"args", {{"name", "chip " + std::to_string(chip)}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", chip},
                      {"args", {{"sort_index", chip}}}});
  }
  for (const auto& [key, id] : tid) {
    const auto [core, l] = key;
    std::string name = "core " + std::to_string(core);
    if (l > 0) name += " collectives" + (l > 1 ? " " + std::to_string(l) : std::string());
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", core / devices_per_chip},
                      {"tid", id},
                      {"args", {{"name", name}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", core / devices_per_chip},
                      {"tid", id},
                      {"args", {{"sort_index", id}}}});
  }
}

}  // namespace

namespace {

/// A JSON value's text as nlohmann writes it (so the streamed document is byte for byte the one
/// a json DOM would dump).
void put(std::string& out, const nlohmann::json& v) { out += v.dump(); }

}  // namespace

std::vector<int> TimelineWriter::span_tids(std::vector<int>& lane_of,
                                           std::map<std::pair<int, int>, int>& tid) const {
  // Lanes per core, then one numeric thread id per (core, lane) in that order.
  std::map<int, std::vector<std::size_t>> spans_of;
  for (std::size_t i = 0; i < spans_.size(); ++i) spans_of[spans_[i].core].push_back(i);
  lane_of.assign(spans_.size(), 0);
  for (int core : traced_cores_) tid[{core, 0}] = 0;
  for (const auto& [core, idx] : spans_of) {
    std::vector<std::tuple<Duration, Duration, bool>> in;
    for (std::size_t i : idx)
      in.emplace_back(spans_[i].start, spans_[i].end,
                      spans_[i].category.rfind("collective:", 0) == 0);
    const auto lanes = assign_lanes(in);
    for (std::size_t k = 0; k < idx.size(); ++k) {
      lane_of[idx[k]] = lanes[k];
      tid[{core, lanes[k]}] = 0;
    }
  }
  int next = 0;
  for (auto& [key, id] : tid) id = next++;
  std::vector<int> out(spans_.size());
  for (std::size_t i = 0; i < spans_.size(); ++i) out[i] = tid.at({spans_[i].core, lane_of[i]});
  return out;
}

std::string TimelineWriter::text() const {
  std::vector<int> lane;
  std::map<std::pair<int, int>, int> tid;
  const std::vector<int> span_tid = span_tids(lane, tid);
  nlohmann::json meta = nlohmann::json::array();
  std::set<int> chips;
  for (const auto& [key, id] : tid) chips.insert(key.first / devices_per_chip_);
  for (const auto& s : samples_) chips.insert(s.chip);
  add_track_names(meta, chips, tid, devices_per_chip_);
  std::vector<int> traced_chips;
  for (int c : traced_cores_)
    if (traced_chips.empty() || traced_chips.back() != c / devices_per_chip_)
      traced_chips.push_back(c / devices_per_chip_);
  const nlohmann::json other = {{"tool", std::string("tpusim ") + TPUSIM_VERSION},
                                {"model", program_.model},
                                {"cores", cores_},
                                {"cores_per_chip", devices_per_chip_},
                                {"traced_cores", traced_cores_},
                                {"traced_chips", traced_chips}};
  // The events are written one by one, in the keys' order of a json object (sorted), instead
  // of built as one DOM first: a timeline of a long step holds hundreds of thousands.
  std::string out =
      "{\"displayTimeUnit\":\"ns\",\"otherData\":" + other.dump() + ",\"traceEvents\":[";
  // About 380 bytes a span and 110 a counter sample (PaLM's timeline): reserved at once rather
  // than grown by doubling, which touched twice the pages (a fifth of the timeline's cost).
  out.reserve(out.size() + 400 * spans_.size() + 128 * samples_.size());
  bool first = true;
  const auto next = [&] {
    if (!first) out += ',';
    first = false;
  };
  for (const auto& e : meta) next(), put(out, e);
  for (std::size_t i = 0; i < spans_.size(); ++i) {
    const Span& s = spans_[i];
    next();
    out += "{\"args\":";
    put(out, args_of(s));
    out += ",\"cat\":";
    put(out, s.category);
    out += ",\"dur\":";
    put(out, (s.end - s.start).us());
    out += ",\"name\":";
    put(out, s.name);
    out += ",\"ph\":\"X\",\"pid\":" + std::to_string(s.core / devices_per_chip_) +
           ",\"tid\":" + std::to_string(span_tid[i]) + ",\"ts\":";
    put(out, (s.start + offset_).us());
    out += '}';
  }
  for (const auto& s : samples_) {
    next();
    out += "{\"args\":{";
    put(out, s.name);
    out += ':';
    put(out, s.value);
    out += "},\"name\":";
    put(out, s.track);
    out += ",\"ph\":\"C\",\"pid\":" + std::to_string(s.chip) + ",\"ts\":";
    put(out, (s.at + offset_).us());
    out += '}';
  }
  for (const auto& e : extra_) next(), put(out, e);
  out += "]}";
  return out;
}

void TimelineWriter::write(const std::string& path) const {
  std::string bytes = text();
  if (path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0) bytes = trace::gzip(bytes);
  write_output_file(path, bytes);
}

std::vector<int> assign_lanes(const std::vector<std::tuple<Duration, Duration, bool>>& spans) {
  std::vector<int> lanes(spans.size(), 0);
  bool separate = false;
  for (std::size_t i = 0; i < spans.size() && !separate; ++i) {
    if (!std::get<2>(spans[i])) continue;
    for (std::size_t j = 0; j < spans.size() && !separate; ++j)
      separate = j != i && overlap(std::get<0>(spans[i]), std::get<1>(spans[i]),
                                   std::get<0>(spans[j]), std::get<1>(spans[j]));
  }
  if (!separate) return lanes;
  // Greedy interval packing by start time: the first lane whose last span has ended.
  std::vector<std::size_t> order(spans.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::get<0>(spans[a]) < std::get<0>(spans[b]);
  });
  std::vector<Duration> lane_end;  // lane k + 1
  for (std::size_t i : order) {
    if (!std::get<2>(spans[i])) continue;
    std::size_t k = 0;
    while (k < lane_end.size() && std::get<0>(spans[i]) < lane_end[k]) ++k;
    if (k == lane_end.size()) lane_end.push_back(Duration{});
    lane_end[k] = std::get<1>(spans[i]);
    lanes[i] = static_cast<int>(k) + 1;
  }
  return lanes;
}

std::vector<int> timeline_cores(int cores, int devices_per_chip, int all_up_to) {
  std::vector<int> out;
  if (cores <= all_up_to) {
    for (int c = 0; c < cores; ++c) out.push_back(c);
    return out;
  }
  const int chips = cores / devices_per_chip;
  for (int chip : {0, chips / 2, chips - 1})
    for (int k = 0; k < devices_per_chip; ++k) out.push_back(chip * devices_per_chip + k);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> parse_timeline_cores(const std::string& list, int cores) {
  const std::string where = "--timeline-cores " + list;
  const std::string allowed = "core ids and ranges from 0 to " + std::to_string(cores - 1) +
                              ", comma-separated, e.g. 0,1,8-15";
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    long long lo = -1, hi = -1;
    char dash = 0, extra = 0;
    const int n = std::sscanf(item.c_str(), "%lld%c%lld%c", &lo, &dash, &hi, &extra);
    if (n == 1 && item.find_first_not_of("0123456789") == std::string::npos)
      hi = lo;
    else if (!(n == 3 && dash == '-' && item.find_first_not_of("0123456789-") == std::string::npos))
      throw ConfigError(where, "'" + item + "' is not a core id or range; expected " + allowed);
    if (lo < 0 || hi < lo || hi >= cores)
      throw ConfigError(where, "'" + item + "' is outside the machine; expected " + allowed);
    if (static_cast<double>(out.size()) + static_cast<double>(hi - lo) + 1 > cores)
      throw ConfigError(where, "lists more cores than the machine has (" + std::to_string(cores) +
                                   "); list each core once");
    for (long long c = lo; c <= hi; ++c) out.push_back(static_cast<int>(c));
    start = comma + 1;
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw ConfigError(where, "lists a core twice; list each core once");
  return out;
}

}  // namespace tpusim::cli
