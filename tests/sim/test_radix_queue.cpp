// The event queue's radix heap against the (time, push sequence) binary heap it replaced: the
// same pop order, ties included, for any monotone sequence of pushes and pops; and the typed
// events on it: each reaches its target with its kind and argument, in (time, scheduling) order.
#include <catch2/catch.hpp>
#include <cstdint>
#include <queue>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "sim/kernel/event_queue.hpp"
#include "sim/kernel/pool.hpp"
#include "sim/kernel/radix_queue.hpp"
#include "tests/sim/sim_fixture.hpp"

using tpusim::RadixQueue;

namespace {

// The reference: earliest time first, then the earliest push.
using Ref = std::tuple<std::int64_t, std::uint64_t, std::size_t>;  // time, push number, slot
struct RefLater {
  bool operator()(const Ref& a, const Ref& b) const {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) > std::get<0>(b)
                                            : std::get<1>(a) > std::get<1>(b);
  }
};

}  // namespace

TEST_CASE("radix queue: pops in the order of the (time, push order) heap, ties included") {
  for (const std::int64_t spread :
       {std::int64_t{1}, std::int64_t{7}, std::int64_t{1} << 20, std::int64_t{1} << 40}) {
    INFO("times up to now + " << spread);
    std::mt19937_64 rng(static_cast<std::uint64_t>(spread));
    RadixQueue q;
    std::priority_queue<Ref, std::vector<Ref>, RefLater> ref;
    std::int64_t now = 0;
    std::uint64_t pushes = 0;
    std::size_t popped = 0;
    for (int round = 0; round < 20000; ++round) {
      // A burst of pushes at or after the current time (many equal times when spread is small).
      const int n = static_cast<int>(rng() % 4);
      for (int i = 0; i < n; ++i) {
        const std::int64_t when = now + static_cast<std::int64_t>(rng() % (spread + 1));
        const std::size_t slot = static_cast<std::size_t>(pushes);
        q.push({when, slot});
        ref.emplace(when, pushes++, slot);
      }
      REQUIRE(q.size() == ref.size());
      if (!ref.empty() && rng() % 3 != 0) {
        REQUIRE(q.min_time() == std::get<0>(ref.top()));
        const RadixQueue::Item it = q.pop();
        CHECK(it.when_ps == std::get<0>(ref.top()));
        CHECK(it.slot == std::get<2>(ref.top()));
        now = it.when_ps;  // the queue's clock: nothing is pushed before it
        ref.pop();
        ++popped;
      }
    }
    while (!ref.empty()) {
      const RadixQueue::Item it = q.pop();
      CHECK(it.slot == std::get<2>(ref.top()));
      ref.pop();
      ++popped;
    }
    CHECK(q.empty());
    CHECK(popped == pushes);
  }
}

TEST_CASE("radix queue: an entry before the last popped time is a bug, not a silent reorder") {
  RadixQueue q;
  q.push({100, 0});
  q.push({50, 1});
  CHECK(q.pop().slot == 1);
  CHECK(q.min_time() == 100);
  CHECK_THROWS_AS(q.push({49, 2}), std::logic_error);
  q.push({50, 3});  // the last popped time itself is allowed
  CHECK(q.pop().slot == 3);
  CHECK(q.pop().slot == 0);
  CHECK(q.empty());
}

namespace {
/// Records every event it gets as time (ps) * 1000 + kind * 100 + arg, and on kind 1 schedules
/// an event for now (which must run after those already due now).
struct Recorder : tpusim::EventTarget {
  explicit Recorder(tpusim::EventQueue& q) : queue(q) {}
  void on_event(std::uint32_t kind, std::uint64_t arg) override {
    seen.push_back(static_cast<double>(tpusim::sim_now().ps() * 1000 + kind * 100 + arg));
    if (kind == 1) queue.at(tpusim::sim_now(), *this, 2, arg);
  }
  tpusim::EventQueue& queue;
  std::vector<double> seen;
};
}  // namespace

TEST_CASE("event queue: typed events reach their target with kind and argument, in order") {
  const std::vector<double> seen = tpusim::test::in_child([] {
    tpusim::EventQueue queue("events");
    Recorder r(queue);
    using tpusim::Duration;
    queue.at(Duration::ps(20), r, 0, 7);
    queue.at(Duration::ps(10), r, 1, 3);  // schedules kind 2 at 10 ps, after the one below
    queue.at(Duration::ps(10), r, 0, 4);
    queue.at(Duration::ps(20), r, 0, 8);
    sc_core::sc_start();
    return r.seen;
  });
  CHECK(seen == std::vector<double>{10 * 1000 + 100 + 3, 10 * 1000 + 4, 10 * 1000 + 200 + 3,
                                    20 * 1000 + 7, 20 * 1000 + 8});
}

TEST_CASE("pool: a record given back is the next one taken, and indices stay put") {
  tpusim::Pool<int> pool;
  const auto a = pool.take(), b = pool.take();
  pool[a] = 1;
  pool[b] = 2;
  pool.give(a);
  CHECK(pool.take() == a);
  CHECK(pool[b] == 2);
  CHECK(pool.size() == 2);
  CHECK(pool.take() == 2);
}
