// Packet-level network: messages are cut into packets that the source injects at the pace of
// its first link; packets queue FIFO, in order of arrival, at each link, so flows that share a
// link interleave packet by packet.
//
// Packet trains keep this affordable at scale. A message's full-size packets travel as one
// train: one event per hop carries the head's arrival time, the spacing of the packets behind it
// and their count, and the link computes every departure in closed form (FIFO service of evenly
// spaced arrivals). The last, shorter packet (the tail) rides in the same event: the block
// carries its arrival, and the link serves it right after the block's last packet. A train is
// optimistic: when another packet reaches a link while a train is still arriving there, the train
// is cut at that instant; a tail still to come at a link that anything else reaches first
// leaves its train there and goes on alone from that hop (drop_tail), as it always did before.
// The packets that arrived before the cut keep their departures; the link and every downstream
// hop of the train forget the rest (busy time, bytes, pending arrivals), and the rest re-enter
// that link one event per packet, so they interleave with the newcomer exactly as single packets
// would. Trains injected on one link together, or while earlier ones still arrive there with the
// same spacing, are served round-robin in closed form instead (on_group, merge_with_open). A
// train whose packets fall into the gaps of the trains open at a link (equal spacing of at least
// two packet times, none of them queued) passes without a cut (fits_gaps, admit_into_gaps).
// Records live in pools addressed by index: no per-packet heap objects. docs/network.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "sim/kernel/pool.hpp"
#include "sim/network/network.hpp"

namespace tpusim {
namespace {

using Index = PoolIndex;
constexpr Index kNone = kNoIndex;

/// k steps of `step_ps` picoseconds, rounded once: injection at the pace of a link puts packet k
/// at bytes_before_k / bandwidth, so spacings need not be whole picoseconds.
Duration times(double step_ps, std::int64_t k) {
  return Duration::ps(static_cast<std::int64_t>(static_cast<double>(k) * step_ps + 0.5));
}

class PacketNetwork : public Network, private EventTarget {
 public:
  PacketNetwork(EventQueue& queue, const NetworkOptions& o) : queue_(queue), opts_(o) {}
  bool coalesces_steps() const override { return opts_.coalesce_ring_steps; }

  void send_batch(const std::vector<Transfer>& transfers, ArrivalCallback on_arrival) override {
    const Duration now = sim_now();
    const Index bi = batches_.take();
    {
      Batch& b = batches_[bi];
      b.pending = 0;
      b.latest = now;
      b.done = std::move(on_arrival);
      b.trains.clear();
      b.finished = false;
      ++b.gen;
    }
    for (const auto& t : transfers) {
      if (t.route->empty() || t.bytes <= 0) continue;
      const Index ti = trains_.take();
      Train& tr = trains_[ti];
      tr.batch = bi;
      tr.route = t.route;
      tr.full = static_cast<std::int64_t>(std::floor(t.bytes / opts_.packet_bytes));
      tr.tail_bytes = t.bytes - static_cast<double>(tr.full) * opts_.packet_bytes;
      tr.first_block = kNone;
      tr.cuts.clear();
      tr.seq = next_seq_++;
      ++tr.gen;
      batches_[bi].trains.push_back(ti);
      batches_[bi].pending += tr.full + (tr.tail_bytes > 0 ? 1 : 0);
      // Injected at the pace of the first link.
      const double spacing = opts_.packet_bytes / t.route->front()->bandwidth.bytes_per_s() * 1e12;
      if (tr.full > 0) {
        const Index b = blocks_.take();
        blocks_[b] = Block{ti, 0, tr.full, now, spacing};
        if (trains_[ti].tail_bytes > 0) {  // the tail rides with the block
          blocks_[b].tail = true;
          blocks_[b].tail_at = now + times(spacing, trains_[ti].full);
        }
        trains_[ti].first_block = b;
        // Trains that start on the same link at the same instant (in any batch) form a group
        // admitted together.
        GroupTail& tail = group_tail(*t.route->front());
        if (tail.block != kNone && tail.when == now)
          blocks_[tail.block].group_next = b;
        else
          queue_.at(now, *this, kGroup, b);
        tail = GroupTail{now, b};
      }
      if (trains_[ti].tail_bytes > 0 && trains_[ti].full == 0) schedule_single(ti, 0, 0, now);
    }
    if (batches_[bi].pending == 0) finish(bi);
  }

  std::uint64_t work_items() const override { return packet_hops_; }

 private:
  struct Batch {
    std::int64_t pending = 0;  ///< packets not yet at their destination
    Duration latest;           ///< latest arrival so far
    ArrivalCallback done;
    std::vector<Index> trains;
    bool finished = false;
    std::uint32_t gen = 0;  ///< tells a stale completion check from a live one
  };
  /// A cut of a train's block at `hop`: its packets from `k` on were re-sent one by one.
  struct Cut {
    std::uint32_t hop;
    std::int64_t k;
    std::uint64_t epoch;
  };
  /// One message: `full` packets of packet_bytes and a tail of tail_bytes (if > 0).
  struct Train {
    Index batch = kNone;
    const Route* route = nullptr;
    std::int64_t full = 0;
    double tail_bytes = 0;
    Index first_block = kNone;
    std::vector<Cut> cuts;
    std::uint64_t seq = 0;  ///< creation order: at equal arrival instants the older goes first
    std::uint32_t gen = 0;
  };
  /// Packets 0..count-1 of a train at one hop, packet k arriving at a0 + times(d, k). Once
  /// admitted, packet k leaves the link at dep0 + times(spacing, k).
  struct Block {
    Index train = kNone;
    std::uint32_t hop = 0;
    std::int64_t count = 0;
    Duration a0;
    double d = 0;  ///< ps
    bool admitted = false;
    Duration dep0, serialise;
    double spacing = 0;        ///< ps
    Duration busy_before;      ///< the link's busy_until before the block was admitted
    Index next = kNone;        ///< the block at the next hop, once scheduled
    Index group_next = kNone;  ///< the next block admitted with this one (injection group)
    std::size_t log_mark = 0;  ///< busy_log size before this block was logged
    bool interleaved = false;  ///< admitted into the gaps of the blocks open at its link
    /// The train's tail rides with this block: it reaches the link at tail_at and, once the
    /// block is admitted, leaves at tail_dep; the link was busy until tail_busy_before then.
    bool tail = false;
    Duration tail_at, tail_dep, tail_busy_before;
    std::size_t tail_log_mark = 0;
  };
  /// One packet (k) of a train arriving at a hop; void if a later cut upstream re-sends it.
  struct Single {
    Index train;
    std::uint32_t gen, hop;
    std::int64_t k;
    std::uint64_t epoch;
  };

  double packet_size(const Train& t, std::int64_t k) const {
    return k < t.full ? opts_.packet_bytes : t.tail_bytes;
  }
  Index& open_block(const NetworkLink& link) {
    if (link.index < 0) throw std::logic_error("packet network: link without an index");
    const auto i = static_cast<std::size_t>(link.index);
    if (i >= open_.size()) open_.resize(i + 1, kNone);
    return open_[i];
  }
  /// The last block of the injection group being formed on a link, until it is admitted.
  struct GroupTail {
    Duration when;
    Index block = kNone;
  };
  GroupTail& group_tail(const NetworkLink& link) {
    const auto i = static_cast<std::size_t>(link.index);
    if (i >= group_tails_.size()) group_tails_.resize(i + 1);
    return group_tails_[i];
  }

  // The trains that start on the same link at the same instant arrive there packet for packet at
  // the same instants, in train order; with equal lengths the link serves them round-robin, so
  // train i of k leaves packet p at start + (p k + i + 1) s. Otherwise they are admitted one
  // after the other (each cuts the one before).
  void on_group(Index head) {
    group_tail(*trains_[blocks_[head].train].route->front()).block = kNone;  // closed
    std::vector<Index>& group = group_scratch_;
    group.clear();
    for (Index b = head; b != kNone; b = blocks_[b].group_next) group.push_back(b);
    const Duration now = sim_now();
    NetworkLink& link = *trains_[blocks_[head].train].route->front();
    if (opts_.contention) settle_tails(link, now, trains_[blocks_[head].train].seq);
    if (opts_.contention && merge_with_open(link, now)) return;
    bool equal = group.size() > 1 && opts_.contention;
    for (const Index b : group) equal = equal && blocks_[b].count == blocks_[head].count;
    if (!equal) {
      const std::vector<Index> members = group;  // on_block may re-enter on_group's scratch
      for (const Index b : members) {
        blocks_[b].group_next = kNone;
        on_block(b);
      }
      return;
    }
    cut_open_train(link, now, trains_[blocks_[head].train].seq);
    admit_group(group, link, max(now, link.busy_until));
  }

  // Admits equal-length blocks that arrive round by round in this order, serving them
  // round-robin from `start` (the link stays busy throughout; callers check that it would).
  void admit_group(const std::vector<Index>& group, NetworkLink& link, Duration start) {
    const Duration s = link.bandwidth.time_for(opts_.packet_bytes);
    const auto k = static_cast<std::int64_t>(group.size());
    const Duration busy_before = link.busy_until;
    for (std::int64_t i = 0; i < k; ++i) {
      const auto at = static_cast<std::size_t>(i);
      blocks_[group[at]].group_next = at + 1 < group.size() ? group[at + 1] : kNone;
      Block& blk = blocks_[group[at]];
      blk.admitted = true;
      blk.busy_before = busy_before;
      blk.serialise = s;
      blk.spacing = static_cast<double>(s.ps() * k);
      blk.dep0 = start + Duration::ps(s.ps() * (i + 1));
      blk.log_mark = link.busy_log ? link.busy_log->size() : 0;
      account(link, blk, blk.count, 1);
    }
    link.busy_until = start + Duration::ps(s.ps() * k * blocks_[group.front()].count);
    for (const Index b : group) admit_tail(link, b);
    open_block(link) = group.front();
    for (const Index b : group) forward(b, link);
  }

  // Trains injected on a link while others injected there earlier are still arriving: when
  // all have the same whole-picosecond spacing d and together keep the link busy, they still
  // interleave round by round. The earlier ones are cut now; their remaining packets continue
  // as new trains (same packets, same priority) and everything is admitted as one group of the
  // shortest remaining length; the packets beyond it follow one by one. False (nothing done)
  // when the conditions do not hold.
  bool merge_with_open(NetworkLink& link, Duration now) {
    const Index head = open_block(link);
    if (head == kNone) return false;
    const double d = blocks_[group_scratch_.front()].d;
    const auto d_ps = static_cast<std::int64_t>(d);
    if (static_cast<double>(d_ps) != d || d_ps <= 0) return false;
    if (blocks_[head].hop != 0 || !arriving_after(head, now)) return false;
    struct Stream {
      Index block;
      Duration base;  ///< arrival of its first packet not yet here
      std::uint64_t seq;
      std::int64_t keep;  ///< open block: packets kept; newcomer: -1
    };
    std::vector<Stream> plan;
    Duration busy = blocks_[head].busy_before;
    for (Index b = head; b != kNone; b = blocks_[b].group_next) {
      const Block& o = blocks_[b];
      if (o.hop != 0 || o.d != d || o.count == 0) return false;
      // Packets here by now stay ahead (they are older than the newcomers).
      const std::int64_t keep = std::min(o.count, (now - o.a0).ps() / d_ps + 1);
      busy = max(busy, o.dep0 + times(o.spacing, keep - 1));
      if (keep < o.count)
        plan.push_back({b, o.a0 + Duration::ps(keep * d_ps), trains_[o.train].seq, keep});
    }
    for (const Index b : group_scratch_) {
      if (blocks_[b].d != d) return false;
      plan.push_back({b, now, trains_[blocks_[b].train].seq, -1});
    }
    std::stable_sort(plan.begin(), plan.end(), [](const Stream& a, const Stream& b) {
      return a.base != b.base ? a.base < b.base : a.seq < b.seq;
    });
    const std::int64_t s_ps = link.bandwidth.time_for(opts_.packet_bytes).ps();
    const auto k = static_cast<std::int64_t>(plan.size());
    const Duration start = max(now, busy);
    if (k * s_ps < d_ps + 1) return false;  // the link would idle between rounds
    for (std::int64_t pos = 0; pos < k; ++pos)
      if (plan[static_cast<std::size_t>(pos)].base > start + Duration::ps(pos * s_ps)) return false;
    // Commit: the newcomers' tails go alone (a newcomer longer than the group continues as a
    // train of its own); cut the open blocks; their rest continues as new trains.
    for (const Index b : group_scratch_)
      if (blocks_[b].tail) drop_tail(b);
    for (Stream& st : plan) {
      if (st.keep < 0) continue;
      const Block o = blocks_[st.block];
      truncate(st.block, st.keep);
      trains_[o.train].cuts.push_back(Cut{0, st.keep, ++epoch_});
      st.block = continue_train(o.train, o.count - st.keep, st.base, d);
    }
    link.busy_until = busy;
    std::int64_t m = blocks_[plan.front().block].count;
    for (const Stream& st : plan) m = std::min(m, blocks_[st.block].count);
    std::vector<Index>& group = merge_scratch_;
    group.clear();
    for (const Stream& st : plan) {
      const Index ti = blocks_[st.block].train;
      const std::int64_t count = blocks_[st.block].count;
      blocks_[st.block].count = m;
      group.push_back(st.block);
      if (count == m) continue;
      // The packets beyond the group's length arrive after it, as a train of their own.
      const Duration a0 = st.base + times(d, m);
      const Index rest = continue_train(ti, count - m, a0, d);
      queue_.at(a0, *this, kGroup, rest);
    }
    admit_group(group, link, start);
    return true;
  }

  // A new train for `packets` further packets of train `from` (same batch, route and priority),
  // whose block reaches the first link at a0 + times(d, k); returns that block (not scheduled).
  Index continue_train(Index from, std::int64_t packets, Duration a0, double d) {
    const Index ti = trains_.take();
    Train& r = trains_[ti];
    const Train& old = trains_[from];
    r.batch = old.batch;
    r.route = old.route;
    r.full = packets;
    r.tail_bytes = 0;
    r.cuts.clear();
    r.seq = old.seq;
    ++r.gen;
    batches_[r.batch].trains.push_back(ti);
    const Index b = blocks_.take();
    blocks_[b] = Block{ti, 0, packets, a0, d};
    trains_[ti].first_block = b;
    return b;
  }

  void schedule_single(Index ti, std::uint32_t hop, std::int64_t k, Duration when) {
    const Index s = singles_.take();
    // Trains cost a record per train; packets travelling one by one cost one each, so their
    // number in flight at once is what memory grows with.
    if (singles_.size() > kMaxPackets)
      throw ConfigError("network.packet_bytes",
                        "more than " + format_number(kMaxPackets) + " packets of " +
                            format_number(opts_.packet_bytes) + " bytes in flight one by one, " +
                            past_limit(kMaxPackets, "packets", "kMaxPackets") +
                            "; use larger packets or network.fidelity=flow");
    singles_[s] = Single{ti, trains_[ti].gen, hop, k, epoch_};
    queue_.at(when, *this, kSingle, s);
  }

  // The last departure of the blocks open at a link (or what the link was busy until before).
  Duration open_until(Index head) const {
    Duration until = blocks_[head].busy_before;
    for (Index o = head; o != kNone; o = blocks_[o].group_next) {
      const Block& ob = blocks_[o];
      if (ob.count > 0) until = max(until, ob.dep0 + times(ob.spacing, ob.count - 1));
    }
    return until;
  }

  // Two equal-rate trains sharing a link in closed form: a block whose packets arrive with the
  // same whole-picosecond spacing d >= 2s as every block open at its link, each of those served
  // on arrival (no backlog), and whose arrivals fall at least s after and s before theirs
  // (modulo d), never meets them: each of its packets leaves s after it arrives, as packet by
  // packet FIFO service would have it. The open blocks (not a round-robin group) must also be
  // the last the link served.
  bool fits_gaps(const NetworkLink& link, Index b) const {
    const auto at = static_cast<std::size_t>(link.index);
    const Index head = at < open_.size() ? open_[at] : kNone;
    if (head == kNone) return false;
    const Block& nb = blocks_[b];
    const std::int64_t s_ps = link.bandwidth.time_for(opts_.packet_bytes).ps();
    const auto d_ps = static_cast<std::int64_t>(nb.d);
    if (static_cast<double>(d_ps) != nb.d || d_ps < 2 * s_ps) return false;
    if (blocks_[head].group_next != kNone && !blocks_[blocks_[head].group_next].interleaved)
      return false;  // a round-robin group
    if (link.busy_until > nb.a0 && link.busy_until != open_until(head)) return false;
    bool meets = false;
    for (Index o = head; o != kNone; o = blocks_[o].group_next) {
      const Block& ob = blocks_[o];
      if (ob.count == 0) continue;
      if (!ob.admitted || ob.d != nb.d || ob.spacing != nb.d ||
          ob.dep0 != ob.a0 + Duration::ps(s_ps))
        return false;
      const std::int64_t off = (((nb.a0 - ob.a0).ps() % d_ps) + d_ps) % d_ps;
      if (off < s_ps || off > d_ps - s_ps) return false;
      meets = meets || ob.dep0 + times(ob.spacing, ob.count - 1) > nb.a0;
    }
    return meets;
  }

  // Admits block b into the gaps of the blocks open at its link (fits_gaps held).
  void admit_into_gaps(NetworkLink& link, Index b) {
    if (blocks_[b].tail) drop_tail(b);  // the gaps are for the full packets
    const Index head = open_block(link);
    Index last = head;
    while (blocks_[last].group_next != kNone) last = blocks_[last].group_next;
    Block& blk = blocks_[b];
    const Duration s = link.bandwidth.time_for(opts_.packet_bytes);
    blk.admitted = true;
    blk.interleaved = true;
    blk.busy_before = blocks_[head].busy_before;
    blk.serialise = s;
    blk.spacing = blk.d;
    blk.dep0 = blk.a0 + s;
    blk.log_mark = link.busy_log ? link.busy_log->size() : 0;
    blk.group_next = kNone;
    account(link, blk, blk.count, 1);
    blocks_[last].group_next = b;
    link.busy_until = open_until(head);
    forward(b, link);
  }

  // The head of a block reaches its link now.
  void on_block(Index b) {
    const Duration now = sim_now();
    const Train& tr = trains_[blocks_[b].train];
    NetworkLink& link = *(*tr.route)[blocks_[b].hop];
    if (blocks_[b].count == 0) return;  // cut upstream before its head got here
    if (opts_.contention) settle_tails(link, now, tr.seq);
    if (opts_.contention && fits_gaps(link, b)) {
      admit_into_gaps(link, b);
      return;
    }
    if (opts_.contention) cut_open_train(link, now, tr.seq);
    Block& blk = blocks_[b];
    const Duration s = link.bandwidth.time_for(opts_.packet_bytes);
    const bool backlog = opts_.contention && link.busy_until > now;
    const auto s_ps = static_cast<double>(s.ps());
    if (backlog && blk.d > s_ps) {
      // Slower arrivals behind a backlog leave unevenly: go packet by packet at this hop.
      if (blk.tail) drop_tail(b);
      const Index ti = blk.train;
      const std::uint32_t hop = blk.hop;
      const std::int64_t count = blk.count;
      const Duration a0 = blk.a0;
      const double d = blk.d;
      blk.count = 0;
      blk.admitted = true;
      for (std::int64_t k = 0; k < count; ++k) schedule_single(ti, hop, k, a0 + times(d, k));
      return;
    }
    const Duration start = backlog ? link.busy_until : now;
    blk.admitted = true;
    blk.busy_before = link.busy_until;
    blk.serialise = s;
    blk.spacing = !opts_.contention ? blk.d : backlog ? s_ps : std::max(blk.d, s_ps);
    blk.dep0 = start + s;
    blk.log_mark = link.busy_log ? link.busy_log->size() : 0;
    account(link, blk, blk.count, 1);
    if (opts_.contention) {
      link.busy_until = blk.dep0 + times(blk.spacing, blk.count - 1);
      open_block(link) = b;
    }
    admit_tail(link, b);
    forward(b, link);
  }

  // Sends an admitted block on to its next hop, or delivers it.
  void forward(Index b, const NetworkLink& link) {
    const Block& blk = blocks_[b];
    const Train& tr = trains_[blk.train];
    if (blk.hop + 1 < tr.route->size()) {
      Block next{blk.train, blk.hop + 1, blk.count, blk.dep0 + link.latency, blk.spacing};
      next.tail = blk.tail;
      next.tail_at = blk.tail_dep + link.latency;
      const Index nb = blocks_.take();  // may move blocks_: no references held past here
      blocks_[nb] = next;
      blocks_[b].next = nb;
      queue_.at(next.a0, *this, kBlock, nb);
    } else {
      Duration last = blk.dep0 + times(blk.spacing, blk.count - 1);
      if (blk.tail) last = max(last, blk.tail_dep);  // without contention a tail may overtake
      arrive(tr.batch, blk.count + (blk.tail ? 1 : 0), last + link.latency);
    }
  }

  // Serves the tail riding with block b, just admitted at `link`: it arrives at tail_at and
  // leaves behind what the link holds (nothing reaches the link before it, settle_tails).
  void admit_tail(NetworkLink& link, Index b) {
    Block& blk = blocks_[b];
    if (!blk.tail) return;
    blk.tail_busy_before = link.busy_until;
    blk.tail_log_mark = link.busy_log ? link.busy_log->size() : 0;
    blk.tail_dep = serve_one(link, trains_[blk.train].tail_bytes, blk.tail_at);
  }

  // Serves one packet of `bytes` that reaches `link` at `at`: FIFO behind what the link holds
  // (with contention), its busy interval and statistics recorded. Returns its departure.
  Duration serve_one(NetworkLink& link, double bytes, Duration at) {
    const Duration serialise = link.bandwidth.time_for(bytes);
    const Duration start = opts_.contention ? max(at, link.busy_until) : at;
    const Duration dep = start + serialise;
    if (opts_.contention) link.busy_until = dep;
    link.record_busy(start, dep);
    link.bytes += bytes;
    link.busy_time += serialise;
    ++link.transfers;
    ++packet_hops_;
    return dep;
  }

  // The tail riding with block b leaves its train at b's hop and goes on alone from there, one
  // event per hop from its arrival (tail_at), as the last packet of a train always did before
  // tails rode with their trains; b's link and the hops downstream forget it (the tail is the
  // last thing each of them took, settle_tails). A tail already sent on alone downstream is void.
  void drop_tail(Index b) {
    const Index ti = blocks_[b].train;
    const std::uint32_t hop = blocks_[b].hop;
    const Duration at = blocks_[b].tail_at;
    const Train& tr = trains_[ti];
    trains_[ti].cuts.push_back(Cut{hop, tr.full, ++epoch_});
    for (Index k = b; k != kNone && blocks_[k].tail; k = blocks_[k].next) {
      Block& blk = blocks_[k];
      blk.tail = false;
      if (!blk.admitted) break;
      NetworkLink& link = *(*tr.route)[blk.hop];
      link.bytes -= tr.tail_bytes;
      link.busy_time -= link.bandwidth.time_for(tr.tail_bytes);
      --link.transfers;
      --packet_hops_;
      if (opts_.contention) link.busy_until = blk.tail_busy_before;
      if (link.busy_log) link.busy_log->resize(blk.tail_log_mark);
      if (blk.hop + 1 == tr.route->size()) batches_[tr.batch].pending += 1;
    }
    schedule_single(ti, hop, tr.full, at);
  }

  // Something reaches `link` now (from the train numbered `seq`): a tail riding with a block
  // open there that has not arrived yet leaves its train (drop_tail), so that the link holds
  // what it would if every tail travelled alone. At the same instant the older train goes first.
  void settle_tails(const NetworkLink& link, Duration now, std::uint64_t seq) {
    const auto at = static_cast<std::size_t>(link.index);
    if (at >= open_.size()) return;
    std::vector<Index>& late = tail_scratch_;
    late.clear();
    for (Index o = open_[at]; o != kNone; o = blocks_[o].group_next) {
      const Block& blk = blocks_[o];
      if (blk.tail && (blk.tail_at > now || (blk.tail_at == now && seq < trains_[blk.train].seq)))
        late.push_back(o);
    }
    // Last first: a group's tails left the link in its order, each restoring what was before it.
    for (auto it = late.rbegin(); it != late.rend(); ++it) drop_tail(*it);
  }

  // Adds (sign 1) or removes (sign -1) packets 0..count-1 of an admitted block to the link's
  // statistics; logs the busy intervals of what is added.
  void account(NetworkLink& link, const Block& blk, std::int64_t count, int sign) {
    const auto n = static_cast<double>(count) * sign;
    link.bytes += n * opts_.packet_bytes;
    link.busy_time += Duration::ps(blk.serialise.ps() * count * sign);
    link.transfers += static_cast<std::uint64_t>(count * sign);
    packet_hops_ += static_cast<std::uint64_t>(count * sign);
    if (sign > 0) log_busy(link, blk, count);
  }

  // Records the busy intervals of packets 0..count-1 of an admitted block (timelines only).
  void log_busy(NetworkLink& link, const Block& blk, std::int64_t count) {
    if (!link.busy_log || count == 0) return;
    if (blk.spacing == static_cast<double>(blk.serialise.ps())) {
      link.record_busy(blk.dep0 - blk.serialise, blk.dep0 + times(blk.spacing, count - 1));
      return;
    }
    for (std::int64_t k = 0; k < count; ++k) {
      const Duration dep = blk.dep0 + times(blk.spacing, k);
      link.record_busy(dep - blk.serialise, dep);
    }
  }

  // A packet of the train numbered `seq` arrives at a link while another train's block is still
  // arriving there: cut that block now and re-send its later packets one by one so that they
  // interleave. A packet of the block that arrives at this very instant stays before the
  // newcomer if its train is the older one.
  void cut_open_train(NetworkLink& link, Duration now, std::uint64_t seq) {
    const Index head = open_block(link);
    if (head == kNone) return;
    if (blocks_[head].group_next == kNone) {
      cut_block(head, now, seq);
      return;
    }
    // A group (members of finished batches have left it, see finish).
    if (!arriving_after(head, now - Duration::ps(1))) return;
    // Cut each member; the link is then busy until the last kept departure.
    Duration busy = blocks_[head].busy_before;
    bool cut = false;
    for (Index b = head; b != kNone; b = blocks_[b].group_next) {
      cut = cut_block(b, now, seq) || cut;
      const Block& blk = blocks_[b];
      if (blk.count > 0) busy = max(busy, blk.dep0 + times(blk.spacing, blk.count - 1));
    }
    if (cut) link.busy_until = busy;
  }

  // True if block b is one of the blocks open at its link that were admitted into each other's
  // gaps (admit_into_gaps).
  bool in_gap_group(NetworkLink& link, Index b) {
    const Index head = open_block(link);
    if (head == kNone || blocks_[head].group_next == kNone ||
        !blocks_[blocks_[head].group_next].interleaved)
      return false;
    for (Index o = head; o != kNone; o = blocks_[o].group_next)
      if (o == b) return true;
    return false;
  }

  // True if a packet of the group starting at `head` arrives after `t`.
  bool arriving_after(Index head, Duration t) const {
    for (Index b = head; b != kNone; b = blocks_[b].group_next) {
      const Block& blk = blocks_[b];
      if (blk.count > 0 && blk.a0 + times(blk.d, blk.count - 1) > t) return true;
    }
    return false;
  }

  // Unlinks block k from the group open at its link, if it is in it.
  void leave_open_group(Index k, const NetworkLink& link) {
    Index& open = open_block(link);
    if (open == k) {
      const Index next = blocks_[k].group_next;
      if (next != kNone) blocks_[next].busy_before = blocks_[k].busy_before;
      open = next;
      return;
    }
    for (Index b = open; b != kNone; b = blocks_[b].group_next)
      if (blocks_[b].group_next == k) {
        blocks_[b].group_next = blocks_[k].group_next;
        return;
      }
  }

  // Cuts one open block at `now` (see cut_open_train); false if all of it had arrived.
  bool cut_block(Index o, Duration now, std::uint64_t seq) {
    const Block blk = blocks_[o];
    // keep = the packets that have arrived by now.
    std::int64_t keep = std::min<std::int64_t>(
        blk.count, static_cast<std::int64_t>(static_cast<double>((now - blk.a0).ps()) / blk.d) + 1);
    while (keep < blk.count && blk.a0 + times(blk.d, keep) <= now) ++keep;
    while (keep > 0 && blk.a0 + times(blk.d, keep - 1) > now) --keep;
    if (keep > 0 && blk.a0 + times(blk.d, keep - 1) == now && seq < trains_[blk.train].seq) --keep;
    if (keep >= blk.count) return false;
    truncate(o, keep);
    trains_[blk.train].cuts.push_back(Cut{blk.hop, keep, ++epoch_});
    for (std::int64_t k = keep; k < blk.count; ++k)
      schedule_single(blk.train, blk.hop, k, blk.a0 + times(blk.d, k));
    return true;
  }

  // Keeps only packets 0..keep-1 of block b and of the train's blocks downstream of it.
  void truncate(Index b, std::int64_t keep) {
    while (b != kNone) {
      if (blocks_[b].tail)  // settle_tails sends a tail on alone before anything is cut
        throw std::logic_error("tpusim bug: packet network cuts a train whose tail rides with it");
      Block& blk = blocks_[b];
      if (blk.count <= keep) return;
      const std::int64_t removed = blk.count - keep;
      if (!blk.admitted) {
        blk.count = keep;
        return;
      }
      const Train& tr = trains_[blk.train];
      NetworkLink& link = *(*tr.route)[blk.hop];
      // Nothing was admitted at this link after the block: it was still arriving.
      account(link, blk, removed, -1);
      if (opts_.contention)
        link.busy_until = keep > 0 ? blk.dep0 + times(blk.spacing, keep - 1) : blk.busy_before;
      blk.count = keep;
      // In a group admitted into each other's gaps, the others still leave as they did.
      if (opts_.contention && in_gap_group(link, b)) link.busy_until = open_until(open_block(link));
      if (link.busy_log) {
        link.busy_log->resize(blk.log_mark);
        log_busy(link, blk, keep);
      }
      if (blk.hop + 1 == tr.route->size()) {
        batches_[tr.batch].pending += removed;
        return;
      }
      b = blk.next;
    }
  }

  bool is_void(const Train& tr, const Single& s) const {
    for (const Cut& c : tr.cuts)
      if (c.hop < s.hop && c.k <= s.k && c.epoch > s.epoch) return true;
    return false;
  }

  // One packet reaches its link now.
  void on_single(Index si) {
    const Single s = singles_[si];
    singles_.give(si);
    const Train& tr = trains_[s.train];
    if (tr.gen != s.gen || is_void(tr, s)) return;
    NetworkLink& link = *(*tr.route)[s.hop];
    const Duration now = sim_now();
    if (opts_.contention) settle_tails(link, now, tr.seq);
    if (opts_.contention) cut_open_train(link, now, tr.seq);
    const Duration dep = serve_one(link, packet_size(tr, s.k), now);
    if (s.hop + 1 < tr.route->size())
      schedule_single(s.train, s.hop + 1, s.k, dep + link.latency);
    else
      arrive(tr.batch, 1, dep + link.latency);
  }

  void arrive(Index bi, std::int64_t packets, Duration when) {
    Batch& b = batches_[bi];
    b.pending -= packets;
    b.latest = max(b.latest, when);
    if (b.pending != 0) return;
    queue_.at(b.latest, *this, kCheck, std::uint64_t{b.gen} << 32 | bi);
  }

  /// The events of this network, each naming its record: a group of trains entering their
  /// first link, a packet travelling alone, a train's block reaching its next hop, and the
  /// check that a batch whose last packet has arrived is still complete (arg: gen << 32 | batch).
  enum Kind : std::uint32_t { kGroup, kSingle, kBlock, kCheck };
  void on_event(std::uint32_t kind, std::uint64_t arg) override {
    const auto index = static_cast<Index>(arg);
    switch (kind) {
      case kGroup:
        on_group(index);
        break;
      case kSingle:
        on_single(index);
        break;
      case kBlock:
        on_block(index);
        break;
      default: {
        // A cut may have re-opened the batch since this check was scheduled.
        const Batch& cur = batches_[index];
        if (cur.gen == static_cast<std::uint32_t>(arg >> 32) && !cur.finished && cur.pending == 0 &&
            sim_now() >= cur.latest)
          finish(index);
      }
    }
  }

  // Every packet of the batch has arrived: release its records, then report.
  void finish(Index bi) {
    Batch& b = batches_[bi];
    b.finished = true;
    for (const Index ti : b.trains) {
      for (Index k = trains_[ti].first_block; k != kNone;) {
        const Block& blk = blocks_[k];
        leave_open_group(k, *(*trains_[ti].route)[blk.hop]);
        const Index next = blk.next;
        blocks_.give(k);
        k = next;
      }
      trains_.give(ti);
    }
    const Duration latest = batches_[bi].latest;
    ArrivalCallback done = std::move(batches_[bi].done);
    batches_.give(bi);
    done(latest);
  }

  EventQueue& queue_;
  NetworkOptions opts_;
  std::uint64_t packet_hops_ = 0;
  std::uint64_t epoch_ = 0;     ///< counts cuts; a single made before a cut upstream is void
  std::uint64_t next_seq_ = 0;  ///< numbers trains in creation order
  Pool<Batch> batches_;
  Pool<Train> trains_;
  Pool<Block> blocks_;
  Pool<Single> singles_;
  std::vector<Index> open_;  ///< per link index: the block admitted last, maybe still arriving
  std::vector<GroupTail> group_tails_;  ///< per link index
  std::vector<Index> group_scratch_, merge_scratch_, tail_scratch_;
};

const NetworkRegistrar kNetworkPacketRegister{
    "packet", [](EventQueue& q, const NetworkOptions& o) -> std::unique_ptr<Network> {
      return std::make_unique<PacketNetwork>(q, o);
    }};

}  // namespace
}  // namespace tpusim
