#pragma once
// The largest inputs tpusim represents. Each limit is checked before anything is simulated or
// allocated in proportion to it, and an input past it is a ConfigError that names the limit
// (docs/limits.md lists them and the reasons for each value).
#include <cstddef>
#include <cstdint>
#include <string>

namespace tpusim {

/// Simulated time: durations are integer picoseconds in a signed 64-bit count (at most 9.2e6 s);
/// 10^6 s (11.6 days) leaves room to add several of them without overflow.
inline constexpr double kMaxSimulatedSeconds = 1e6;
/// Bytes of one tensor, message or collective: 10^15 (1 PB), 200 times the HBM of a Multipod.
/// Sizes stay exact in a double (2^53) and byte counts of a whole run fit 64 bits.
inline constexpr double kMaxBytes = 1e15;
/// FLOPs of one op: 10^21, more than a TPU-v3 core does in kMaxSimulatedSeconds.
inline constexpr double kMaxOpFlops = 1e21;
/// Chips of one topology: 65,536 (16 times a Multipod). Elaboration is linear in chips and links.
inline constexpr std::int64_t kMaxChips = 1 << 16;
/// Point-to-point transfers one collective's plan may hold (an all-to-all over n cores is n(n-1),
/// each with its route): 2^21, a few hundred MB of plan at most.
inline constexpr std::int64_t kMaxCollectiveTransfers = 1 << 21;
/// Packets the packet-level network may hold in flight one by one at once: 2^23 (each is a record
/// and an event of about 100 bytes, so at most about 1 GB; packet trains cost one record a train).
inline constexpr double kMaxPackets = 8388608.0;
/// Packets the packet-level network may inject in one run, estimated before it starts from the
/// bytes every core sends (twice its buffer for an all-reduce, once for the other collectives),
/// times the cores, over network.packet_bytes: 2^33. Packet trains make uncontended packets
/// cheap, but contention cuts them into single packets, one event each.
inline constexpr double kMaxInjectedPackets = 8589934592.0;
/// Packet-hops of the all-to-alls of one packet-level run, estimated before it starts: their bytes
/// times the cores over network.packet_bytes, times the topology's mean hops: 2.4e7. Crossing
/// flows cut an all-to-all's packet trains into single packets, an event each per hop, about
/// 0.25 us of CPU each (measured, docs/hardening.md: 1 MiB on 8x8 in 16-byte packets, 3.4e7
/// packet-hops, 7.8 s of CPU and 740 MB, 62 to 100 s of wall time on the shared 2-core machine;
/// decoder_1b_16's sequence all-to-alls in 4096-byte packets, 2.1e7, 6.5 s of CPU). The limit
/// keeps a run near 6 s of CPU, within 30 s of wall time on a machine loaded five times over.
inline constexpr double kMaxAllToAllPacketHops = 2.4e7;
/// Bytes of a trace or profile file after decompression: 512 MiB (a 1 M-op trace is about 140 MB).
inline constexpr std::size_t kMaxTraceFileBytes = std::size_t{512} << 20;
/// Ops of one Program read from a trace or imported from a profile: 2^20.
inline constexpr std::size_t kMaxTraceOps = std::size_t{1} << 20;
/// Ops of the device loop `tpusim train` simulates (its simulated train and eval steps, each a copy
/// of its step's Program, plus one infeed op a step): 2^20, as for a trace; an op costs about a
/// kilobyte in the Program and the simulation, so a loop stays near a gigabyte.
inline constexpr std::size_t kMaxLoopOps = std::size_t{1} << 20;
/// Device loops `tpusim train --timeline` draws one by one on its composed run track: 1,000 (the
/// loops after the first are alike; the rest are drawn as one span, so a run of 10^7 loops gives
/// a timeline of a few thousand events, not tens of millions).
inline constexpr std::int64_t kMaxTimelineLoops = 1000;
/// Spans of one timeline (a traced core's op is a span, with an HBM counter beside it): 2^18.
/// Checked before the simulation from the traced cores times the Program's ops, and again as
/// spans are recorded. Measured: 203,264 spans (BERT-Large, 256 cores traced) took 1.45 GB, about
/// 7 KB a span while the JSON document is built, so a timeline stays under 2 GB.
inline constexpr double kMaxTimelineSpans = 262144.0;
/// Ranks (one `.et` file each) of one `tpusim trace export --format chakra`: 2^17, every
/// TensorCore of kMaxChips two-core chips.
inline constexpr std::int64_t kMaxChakraRanks = std::int64_t{1} << 17;
/// Series of one chart of `tpusim plot`: 1,000 (beyond, the legend does not fit the drawing
/// library's surface); a label is drawn with at most 200 characters.
inline constexpr std::size_t kMaxPlotSeries = 1000;
/// Rows of a results table `tpusim plot` draws: 20,000 (a plan's space, kMaxPlanLayouts; a sweep
/// has at most kMaxSweepPoints).
inline constexpr std::size_t kMaxPlotRows = 20000;

/// Points of one sweep (the product of its axes' lengths), checked before any is expanded: 10^4
/// (every point is a simulation of seconds to minutes, and all are validated before any runs).
inline constexpr std::int64_t kMaxSweepPoints = 10000;
/// Layouts of one `tpusim plan` search space (the product of its axes' lengths), checked before
/// any is enumerated: 20,000. Each is a study document checked in-process (a few milliseconds and
/// tens of kilobytes), so a space stays near a minute and half a gigabyte; the largest default
/// space (a convolutional model on many cores) has under 19,000.
inline constexpr std::size_t kMaxPlanLayouts = 20000;
/// Preset files one study may include in all (counting repeats), however they nest.
inline constexpr int kMaxPresetFiles = 64;
/// Nesting depth of a sweep expression (parentheses, unary operators, chained operators).
inline constexpr int kMaxExprDepth = 200;

/// A number for messages, %g style: "1.2e+07", "4096".
std::string format_number(double v);
/// "past the limit of 1e+15 bytes (kMaxBytes, docs/limits.md)".
std::string past_limit(double limit, const std::string& unit, const char* name);

}  // namespace tpusim
