// The --sizes document of `tpusim trace import`: what the user supplies for collectives whose
// size or group the profile does not record.
#include "core/errors.hpp"
#include "traces/format/json_field.hpp"
#include "traces/format/trace_format.hpp"
#include "traces/profile/profile_import.hpp"

namespace tpusim::trace {

CollectiveOverrides read_collective_overrides(const nlohmann::json& doc, const std::string& name) {
  JsonField root(doc, name, "");
  if (!doc.is_object())
    root.fail(
        "is not an object; expected {\"all-reduce.3\": BYTES, ...} mapping op names to sizes");
  CollectiveOverrides out;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (!it.key().empty() && it.key()[0] == '_') continue;
    JsonField f = root[it.key()];
    CollectiveOverride o;
    if (f.json().is_number()) {
      o.bytes = f.non_negative();
      out[it.key()] = o;
      continue;
    }
    if (!f.is_object())
      f.fail(brief(f.json()) + " is neither a size in bytes nor an object with \"bytes\"");
    f.only_keys({"bytes", "dtype", "axes", "replica_groups", "shift", "wrap"});
    if (auto b = f.optional("bytes")) o.bytes = b->non_negative();
    if (auto d = f.optional("dtype")) {
      o.dtype = parse_dtype(d->string());
      if (!o.dtype) d->fail("'" + d->string() + "' is not a dtype; expected one of bf16, f32, i32");
    }
    if (auto a = f.optional("axes")) {
      o.axes.emplace();
      for (std::size_t i = 0; i < a->array_size(); ++i) o.axes->push_back(a->at(i).string());
    }
    if (auto g = f.optional("replica_groups")) {
      o.replica_groups.emplace();
      for (std::size_t i = 0; i < g->array_size(); ++i) {
        JsonField group = g->at(i);
        std::vector<int> members;
        for (std::size_t k = 0; k < group.array_size(); ++k)
          members.push_back(static_cast<int>(group.at(k).integer(0, kMaxMeshDevices - 1)));
        o.replica_groups->push_back(std::move(members));
      }
    }
    if (o.axes && o.replica_groups) f.fail("has both 'axes' and 'replica_groups'; give one");
    if (auto s = f.optional("shift"))
      o.shift = static_cast<int>(s->integer(-kMaxMeshDevices, kMaxMeshDevices));
    if (auto w = f.optional("wrap")) o.wrap = w->boolean();
    out[it.key()] = o;
  }
  return out;
}

}  // namespace tpusim::trace
