#include "traces/profile/device_tracks.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "traces/format/json_field.hpp"

namespace tpusim::trace {
namespace {

// pid and tid may be numbers or strings in Chrome trace files; their JSON text is the key.
std::string id_key(const JsonField& event, const char* key) {
  auto f = event.optional(key);
  if (!f) return "";
  if (!f->json().is_number_integer() && !f->json().is_string())
    f->fail(brief(f->json()) + " is " + f->json().type_name() +
            "; expected an integer or a string");
  return f->json().dump();
}

// "/device:TPU:3" anywhere in the process name gives 3; -1 if it does not name a TPU.
int tpu_id_of(const std::string& process_name) {
  const std::string tag = "/device:TPU:";
  std::size_t pos = process_name.find(tag);
  if (pos == std::string::npos) return -1;
  pos += tag.size();
  long id = 0;
  bool any = false;
  while (pos < process_name.size() && std::isdigit(static_cast<unsigned char>(process_name[pos]))) {
    id = id * 10 + (process_name[pos++] - '0');
    if (id > (1L << 24)) return -1;
    any = true;
  }
  return any ? static_cast<int>(id) : -1;
}

SpanEvent read_span(const JsonField& e, std::size_t index) {
  SpanEvent s;
  s.index = index;
  s.name = e["name"].string();
  s.ts_us = e["ts"].number();
  s.dur_us =
      e["dur"].bounded("a duration", kMaxSimulatedSeconds * 1e6, "us", "kMaxSimulatedSeconds");
  if (auto args = e.optional("args")) {
    if (!args->is_object())
      args->fail(brief(args->json()) + " is not an object; expected the event's arguments");
    s.args = &args->json();
  }
  return s;
}

}  // namespace

std::vector<DeviceTrack> read_device_tracks(const nlohmann::json& doc, const std::string& name,
                                            const std::string& ops_thread) {
  JsonField root(doc, name, "");
  const nlohmann::json* list = &doc;
  std::string prefix = "";
  if (doc.is_object()) {
    if (!doc.contains("traceEvents"))
      root.fail("is not a Chrome trace event file (no \"traceEvents\" array)");
    list = &doc["traceEvents"];
    prefix = "traceEvents";
  }
  JsonField events(*list, name, prefix);
  const std::size_t n = events.array_size();

  // Pass 1: metadata. Which pids are TPUs, which (pid, tid) are the ops and steps threads.
  std::map<std::string, DeviceTrack> tracks;       // by pid key
  std::map<std::string, std::string> thread_name;  // "pid/tid" -> name
  for (std::size_t i = 0; i < n; ++i) {
    JsonField e = events.at(i);
    if (!e.is_object()) e.fail(brief(e.json()) + " is not an object; expected a trace event");
    auto ph = e.optional("ph");
    if (!ph || ph->string_or_empty() != "M") continue;
    const std::string what = e["name"].string_or_empty();
    if (what != "process_name" && what != "thread_name") continue;
    const std::string label = e["args"]["name"].string_or_empty();
    const std::string pid = id_key(e, "pid");
    if (what == "process_name") {
      const int id = tpu_id_of(label);
      if (id < 0) continue;
      tracks[pid].tpu_id = id;
      tracks[pid].process_name = label;
    } else {
      thread_name[pid + "/" + id_key(e, "tid")] = label;
    }
  }

  // Pass 2: complete events on the TPU threads we read.
  for (std::size_t i = 0; i < n; ++i) {
    JsonField e = events.at(i);
    auto ph = e.optional("ph");
    if (!ph || ph->string_or_empty() != "X") continue;
    const std::string pid = id_key(e, "pid");
    auto track = tracks.find(pid);
    if (track == tracks.end()) continue;
    auto thread = thread_name.find(pid + "/" + id_key(e, "tid"));
    if (thread == thread_name.end()) continue;
    if (thread->second == ops_thread)
      track->second.ops.push_back(read_span(e, i));
    else if (thread->second == kStepsThread)
      track->second.steps.push_back(read_span(e, i));
  }

  std::vector<DeviceTrack> out;
  for (auto& [pid, t] : tracks) {
    auto by_start = [](const SpanEvent& a, const SpanEvent& b) { return a.ts_us < b.ts_us; };
    std::stable_sort(t.ops.begin(), t.ops.end(), by_start);
    std::stable_sort(t.steps.begin(), t.steps.end(), by_start);
    out.push_back(std::move(t));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const DeviceTrack& a, const DeviceTrack& b) { return a.tpu_id < b.tpu_id; });
  return out;
}

}  // namespace tpusim::trace
