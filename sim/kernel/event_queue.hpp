#pragma once
// A callback queue on one SystemC event: the kernel sees one activation per distinct timestamp,
// however many callbacks fall on it. Used by the network and the collective engine, whose work
// is bookkeeping at known future times rather than processes that wait.
#include <functional>
#include <systemc>
#include <vector>

#include "core/units.hpp"
#include "sim/kernel/radix_queue.hpp"

namespace tpusim {

/// A delay from now as a kernel time. Throws ConfigError if now + d passes
/// kMaxSimulatedSeconds (core/limits.hpp): the kernel's clock must never wrap.
sc_core::sc_time to_sc(Duration d);
inline Duration from_sc(const sc_core::sc_time& t) {
  return Duration::ps(static_cast<std::int64_t>(t.value()));
}
/// The current simulated time as a Duration.
inline Duration sim_now() { return from_sc(sc_core::sc_time_stamp()); }

class EventQueue : public sc_core::sc_module {
 public:
  using Callback = std::function<void()>;
  SC_HAS_PROCESS(EventQueue);
  explicit EventQueue(sc_core::sc_module_name name);

  /// Runs `cb` at absolute time `when` (not before now). Same-time callbacks run in order.
  void at(Duration when, Callback cb);
  std::uint64_t activations() const { return activations_; }
  /// Called every 1024 callbacks (a progress line); empty: nothing is called.
  void set_tick(std::function<void()> tick) { tick_ = std::move(tick); }

 private:
  void fire();
  void arm();

  /// Times and slots, earliest first, equal times in the order they came (radix_queue.hpp);
  /// plain data, so that moving an entry moves 16 bytes: the callback waits in slots_.
  RadixQueue items_;
  std::vector<Callback> slots_;    ///< callbacks, addressed by RadixQueue::Item::slot
  std::vector<std::size_t> free_;  ///< slots to reuse
  sc_core::sc_event wake_;
  std::int64_t armed_for_ = -1;
  std::uint64_t activations_ = 0;
  std::uint64_t callbacks_ = 0;  ///< callbacks run, for the progress tick
  std::function<void()> tick_;
};

}  // namespace tpusim
