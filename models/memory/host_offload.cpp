#include "models/memory/host_offload.hpp"

#include <algorithm>
#include <unordered_map>

namespace tpusim {
namespace {

constexpr const char kFetch[] = ".fetch";  // training.cpp's host_fetch names NAME.fetch

bool is_fetch(const Op& op) {
  const std::size_t n = sizeof(kFetch) - 1;
  return !op.is_collective && op.name.size() > n &&
         op.name.compare(op.name.size() - n, n, kFetch) == 0;
}

// Per op: the bytes its output (or a fused member's) sends to host memory, from the fetch ops
// that bring them back (the tensor NAME of NAME.fetch, produced by the op named NAME or by the
// fusion holding it).
std::vector<double> offloaded_bytes(const Program& p) {
  std::vector<double> out(p.ops.size(), 0);
  std::unordered_map<std::string, int> producer;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    producer.emplace(p.ops[i].name, static_cast<int>(i));
    for (const std::string& m : p.ops[i].fused) producer.emplace(m, static_cast<int>(i));
  }
  for (const Op& op : p.ops) {
    if (!is_fetch(op)) continue;
    const auto it = producer.find(op.name.substr(0, op.name.size() - (sizeof(kFetch) - 1)));
    if (it != producer.end()) out[it->second] += op.output.bytes;
  }
  return out;
}

}  // namespace

// Along one device's compute timeline (the ops in program order at their compute times;
// collectives add no time here, so the compute a copy can hide behind is at most what runs
// between): an offload joins the outbound queue of the host link when its producer ends; a
// fetch's inbound copy starts when its fetch op starts (where the memory model makes the tensor
// live), when the inbound link is free and when every offload has reached host memory (fetches
// run in the backward pass, offloads in the forward). The first op that depends on the fetch op
// (the first compute op after it, if that is a collective) starts no earlier than the copy ends;
// the fetch op itself ends no earlier, if nothing later depends on it.
HostOffloadTimes host_offload_times(const Program& program, const std::vector<Duration>& op_time,
                                    Bandwidth link) {
  HostOffloadTimes out;
  out.op_time = op_time;
  const std::size_t n = program.ops.size();
  std::vector<bool> fetch(n);
  for (std::size_t i = 0; i < n; ++i) fetch[i] = is_fetch(program.ops[i]);
  if (std::none_of(fetch.begin(), fetch.end(), [](bool f) { return f; }))
    return out;  // nothing offloaded: every Program but those of the *_offloaded policies
  const std::vector<double> sent = offloaded_bytes(program);
  // Per fetch op, the first later op that depends on it, or the first compute op after that
  // collective (collectives take no time on this timeline); n: none.
  std::vector<std::size_t> reader(n, n);
  for (std::size_t i = 0; i < n; ++i)
    for (int d : program.ops[i].deps)
      if (d >= 0 && static_cast<std::size_t>(d) < i && fetch[d] && reader[d] == n) reader[d] = i;
  for (std::size_t& r : reader)
    while (r < n && program.ops[r].is_collective) ++r;
  std::vector<double> ready(n, 0);  // per op, when the copies it waits for have landed
  double clock = 0, out_free = 0, in_free = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = program.ops[i];
    // The wait for the copies this op reads lengthens it, as a stall at its start.
    const double wait = std::max(0.0, ready[i] - clock);
    double t = op_time[i].seconds() + wait;
    out.exposed += Duration::seconds(wait);
    const double start = clock;
    if (fetch[i] && op.output.bytes > 0) {
      in_free = std::max({in_free, out_free, start}) + link.time_for(op.output.bytes).seconds();
      out.bytes_in += op.output.bytes;
      if (reader[i] < n) {
        ready[reader[i]] = std::max(ready[reader[i]], in_free);
      } else {
        const double late = std::max(0.0, in_free - (start + t));
        out.exposed += Duration::seconds(late);
        t += late;
      }
    }
    out.op_time[i] = Duration::seconds(t);
    clock = start + t;
    if (sent[i] > 0) {
      out_free = std::max(out_free, clock) + link.time_for(sent[i]).seconds();
      out.bytes_out += sent[i];
    }
  }
  return out;
}

}  // namespace tpusim
