#pragma once
// A delay as a kernel time on the per-access path. sc_time::from_value is a library call that
// checks the kernel's time resolution on every call; a memory access converts two or three
// delays, which made from_value a tenth of a full BERT-4096 run's instructions. The resolution
// is 1 ps (the first from_value, to_sc, fixes it), so a delay is that many picoseconds: scaling
// the 1 ps time by the count is inline, and exact below 2^53 ps (about 2.5 hours); longer
// delays take from_value.
#include <cstdint>
#include <systemc>

#include "core/units.hpp"

namespace tpusim {

inline sc_core::sc_time sc_delay(Duration d) {
  static const sc_core::sc_time kPs = sc_core::sc_time::from_value(1);
  const std::int64_t ps = d.ps();
  if (ps >= 0 && ps < (std::int64_t{1} << 53)) return kPs * static_cast<double>(ps);
  return sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(ps));
}

}  // namespace tpusim
