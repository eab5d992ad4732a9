#include "sim/kernel/event_queue.hpp"

#include <stdexcept>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "sim/kernel/failure.hpp"

namespace tpusim {

namespace {
[[noreturn]] void past_time_limit(double seconds) {
  throw ConfigError("simulated time",
                    "the run reaches " + format_number(seconds) + " s, " +
                        past_limit(kMaxSimulatedSeconds, "s", "kMaxSimulatedSeconds") +
                        "; reduce the work of the step");
}
constexpr std::int64_t kMaxSimulatedPs = static_cast<std::int64_t>(kMaxSimulatedSeconds * 1e12);
}  // namespace

sc_core::sc_time to_sc(Duration d) {
  const std::int64_t now = sim_now().ps();
  if (d.ps() < 0) throw std::logic_error("tpusim bug: a negative delay");
  if (d.ps() > kMaxSimulatedPs - now) past_time_limit(Duration::ps(now).seconds() + d.seconds());
  return sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(d.ps()));
}

EventQueue::EventQueue(sc_core::sc_module_name name)
    : sc_core::sc_module(name), StatGroup("queue") {
  add_stat("typed_events", "events",
           "typed events run (the networks', the collective engine's and the hosts')",
           [this] { return static_cast<double>(callbacks_); });
  add_stat("activations", "activations", "activations of the queue's SC_METHOD (distinct instants)",
           [this] { return static_cast<double>(activations_); });
  SC_METHOD(fire);
  sensitive << wake_;
  dont_initialize();
}

void EventQueue::at(Duration when, EventTarget& target, std::uint32_t kind, std::uint64_t arg) {
  const std::int64_t now = sim_now().ps();
  const std::int64_t t = when.ps() < now ? now : when.ps();
  if (t > kMaxSimulatedPs) past_time_limit(when.seconds());
  std::size_t slot;
  if (free_.empty()) {
    slot = slots_.size();
    slots_.push_back({&target, kind, arg});
  } else {
    slot = free_.back();
    free_.pop_back();
    slots_[slot] = {&target, kind, arg};
  }
  items_.push({t, slot});
  if (armed_for_ < 0 || t < armed_for_) arm();
}

void EventQueue::arm() {
  if (items_.empty()) {
    armed_for_ = -1;
    return;
  }
  const std::int64_t t = items_.min_time();
  const std::int64_t now = sim_now().ps();
  armed_for_ = t;
  // A pending later notification is replaced by an earlier one (SystemC keeps the earliest).
  wake_.notify(to_sc(Duration::ps(t - now)));
}

void EventQueue::fire() {
  ++activations_;
  armed_for_ = -1;
  const std::int64_t now = sim_now().ps();
  while (!items_.empty() && items_.min_time() <= now) {
    const std::size_t slot = items_.pop().slot;
    // Copy the event out and free its slot before running it: it may schedule more.
    const Event e = slots_[slot];
    free_.push_back(slot);
    guarded([&e] { e.target->on_event(e.kind, e.arg); });
    // Every 1024 events, not activations: one instant may hold millions of them (a
    // packet-level all-to-all injects every pair's packets at once), and the progress line must
    // still come.
    if ((++callbacks_ & 1023) == 0 && tick_) tick_();
  }
  if (armed_for_ < 0) arm();
}

}  // namespace tpusim
