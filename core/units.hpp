#pragma once
// Units at the boundary: config numbers are converted once into these types. Inside tpusim a
// time is a Duration (integer picoseconds, the SystemC kernel's resolution), a size is a byte
// count, a rate is a Bandwidth; no bare double whose unit must be guessed.
#include <cmath>
#include <cstdint>
#include <string>

namespace tpusim {

using ByteCount = std::uint64_t;

/// A span of simulated time, in integer picoseconds.
class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration ps(std::int64_t v) { return Duration(v); }
  static Duration ns(double v) { return Duration(round_ps(v * 1e3)); }
  static Duration seconds(double v) { return Duration(round_ps(v * 1e12)); }
  static Duration cycles(double n, double clock_hz) { return seconds(n / clock_hz); }

  constexpr std::int64_t ps() const { return ps_; }
  double ns() const { return static_cast<double>(ps_) * 1e-3; }
  double us() const { return static_cast<double>(ps_) * 1e-6; }
  double ms() const { return static_cast<double>(ps_) * 1e-9; }
  double seconds() const { return static_cast<double>(ps_) * 1e-12; }

  constexpr Duration operator+(Duration o) const { return Duration(ps_ + o.ps_); }
  constexpr Duration operator-(Duration o) const { return Duration(ps_ - o.ps_); }
  Duration& operator+=(Duration o) {
    ps_ += o.ps_;
    return *this;
  }
  Duration& operator-=(Duration o) {
    ps_ -= o.ps_;
    return *this;
  }
  Duration operator*(double f) const { return Duration(round_ps(static_cast<double>(ps_) * f)); }
  constexpr bool operator<(Duration o) const { return ps_ < o.ps_; }
  constexpr bool operator>(Duration o) const { return ps_ > o.ps_; }
  constexpr bool operator<=(Duration o) const { return ps_ <= o.ps_; }
  constexpr bool operator>=(Duration o) const { return ps_ >= o.ps_; }
  constexpr bool operator==(Duration o) const { return ps_ == o.ps_; }
  constexpr bool operator!=(Duration o) const { return ps_ != o.ps_; }

 private:
  constexpr explicit Duration(std::int64_t v) : ps_(v) {}
  // Round half away from zero; a cast is much cheaper than llround in the network's hot path.
  // Saturates at +-4e18 ps (NaN goes high), far past kMaxSimulatedSeconds (core/limits.hpp), so
  // an absurd time is caught by the limit checks instead of wrapping around.
  static std::int64_t round_ps(double v) {
    constexpr double kSaturate = 4e18;
    if (!(v < kSaturate)) return static_cast<std::int64_t>(kSaturate);
    if (v <= -kSaturate) return -static_cast<std::int64_t>(kSaturate);
    return static_cast<std::int64_t>(v >= 0 ? v + 0.5 : v - 0.5);
  }
  std::int64_t ps_ = 0;
};

inline Duration max(Duration a, Duration b) { return a < b ? b : a; }
inline Duration min(Duration a, Duration b) { return a < b ? a : b; }

/// A data rate in bytes per second (GB/s in configs means 10^9 bytes per second).
class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bytes_per_s(double v) { return Bandwidth(v); }
  static constexpr Bandwidth GBps(double v) { return Bandwidth(v * 1e9); }
  constexpr double bytes_per_s() const { return bps_; }
  constexpr double GBps() const { return bps_ * 1e-9; }
  /// Time to move `bytes` at this rate.
  Duration time_for(double bytes) const { return Duration::seconds(bytes / bps_); }
  Bandwidth operator*(double f) const { return Bandwidth(bps_ * f); }

 private:
  constexpr explicit Bandwidth(double v) : bps_(v) {}
  double bps_ = 0;
};

/// Parses sizes such as "64MiB", "1.5GB", "4096" (bytes) into a byte count. GB is 10^9,
/// GiB is 2^30. Throws ConfigError naming `where` on anything else, zero or negative.
ByteCount parse_bytes(const std::string& text, const std::string& where);

/// "64 MiB", "1.5 GiB": a readable size.
std::string format_bytes(double bytes);

}  // namespace tpusim
