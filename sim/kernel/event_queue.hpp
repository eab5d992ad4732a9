#pragma once
// A queue of typed events on one SystemC event: the kernel sees one activation per distinct
// timestamp, however many events fall on it. Used by the networks, the collective engine and the
// hosts, whose work is bookkeeping at known future times rather than processes that wait. An
// event is plain data (its target, one of the target's kinds, a 64-bit argument: an index into
// the target's pooled records, a core, a generation), never a heap-allocated closure.
#include <cstdint>
#include <functional>
#include <systemc>
#include <vector>

#include "core/units.hpp"
#include "sim/kernel/radix_queue.hpp"
#include "sim/kernel/stats.hpp"

namespace tpusim {

/// A delay from now as a kernel time. Throws ConfigError if now + d passes
/// kMaxSimulatedSeconds (core/limits.hpp): the kernel's clock must never wrap.
sc_core::sc_time to_sc(Duration d);
inline Duration from_sc(const sc_core::sc_time& t) {
  return Duration::ps(static_cast<std::int64_t>(t.value()));
}
/// The current simulated time as a Duration: sc_time_stamp()'s value, read inline from the
/// current simulation context (sc_time_stamp itself is a call into the shared library, and the
/// hot paths ask for the time millions of times a run).
inline Duration sim_now() { return from_sc(sc_core::sc_get_curr_simcontext()->time_stamp()); }

/// What takes typed events: the component that scheduled them (EventQueue::at) gets them back
/// with the kind and argument it gave.
class EventTarget {
 public:
  virtual void on_event(std::uint32_t kind, std::uint64_t arg) = 0;

 protected:
  ~EventTarget() = default;
};

class EventQueue : public sc_core::sc_module, public StatGroup {
 public:
  SC_HAS_PROCESS(EventQueue);
  explicit EventQueue(sc_core::sc_module_name name);

  /// Calls target.on_event(kind, arg) at absolute time `when` (not before now). Same-time
  /// events run in the order they were scheduled.
  void at(Duration when, EventTarget& target, std::uint32_t kind, std::uint64_t arg = 0);
  std::uint64_t activations() const { return activations_; }
  /// Called every 1024 events (a progress line); empty: nothing is called.
  void set_tick(std::function<void()> tick) { tick_ = std::move(tick); }

 private:
  void fire();
  void arm();

  struct Event {
    EventTarget* target;
    std::uint32_t kind;
    std::uint64_t arg;
  };
  /// Times and slots, earliest first, equal times in the order they came (radix_queue.hpp);
  /// plain data, so that moving an entry moves 16 bytes: the event waits in slots_.
  RadixQueue items_;
  std::vector<Event> slots_;       ///< events, addressed by RadixQueue::Item::slot
  std::vector<std::size_t> free_;  ///< slots to reuse
  sc_core::sc_event wake_;
  std::int64_t armed_for_ = -1;
  std::uint64_t activations_ = 0;
  std::uint64_t callbacks_ = 0;  ///< events run, for the progress tick
  std::function<void()> tick_;
};

}  // namespace tpusim
