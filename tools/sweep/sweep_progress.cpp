#include "tools/sweep/sweep_progress.hpp"

#include <algorithm>

namespace tpusim::cli {

SweepProgress::SweepProgress(std::size_t total, std::size_t already_done, bool terminal,
                             std::FILE* out)
    : total_(total),
      done_(already_done),
      terminal_(terminal),
      out_(out),
      start_(std::chrono::steady_clock::now()) {
  if (already_done > 0)
    std::fprintf(out_, "tpusim sweep: %zu of %zu points already finished, skipping them\n",
                 already_done, total);
  std::fflush(out_);
}

std::string clock_text(double seconds) {
  long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

void SweepProgress::finished(const std::string& label, bool ok, const std::string& summary,
                             double seconds, std::size_t running, bool oom) {
  running_ = running;
  ++done_;
  ++finished_now_;
  if (!ok) ++failed_;
  char time_buf[32];
  std::snprintf(time_buf, sizeof time_buf, "%.1f s", seconds);
  if (terminal_) {
    // Failures scroll above the bar so they stay readable; successes only move the bar.
    if (!ok) std::fprintf(out_, "\r\033[KFAILED %s: %s\n", label.c_str(), summary.c_str());
    draw(running_);
    return;
  }
  std::fprintf(out_, "[%zu/%zu] %s %s: %s (%s)\n", done_, total_,
               !ok   ? "FAILED"
               : oom ? "oom"
                     : "ok",
               label.c_str(), summary.c_str(), time_buf);
  std::fflush(out_);
}

void SweepProgress::skipped(std::size_t n) { total_ -= std::min(n, total_ - done_); }

void SweepProgress::tick(std::size_t running) {
  running_ = running;
  if (!terminal_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(200)) return;
  draw(running);
}

void SweepProgress::draw(std::size_t running) {
  last_draw_ = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(last_draw_ - start_).count();
  constexpr int kWidth = 24;
  const int filled = total_ ? static_cast<int>(kWidth * done_ / total_) : kWidth;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar += std::string(static_cast<std::size_t>(kWidth - filled), '.');
  // The estimate uses this run's pace: elapsed per point finished now, times what is left.
  std::string eta = "--:--";
  if (finished_now_ > 0)
    eta = clock_text(elapsed / static_cast<double>(finished_now_) *
                     static_cast<double>(total_ - done_));
  std::fprintf(out_, "\r\033[K[%s] %zu/%zu done, %zu running, %zu failed, %s elapsed, ETA %s",
               bar.c_str(), done_, total_, running, failed_, clock_text(elapsed).c_str(),
               eta.c_str());
  std::fflush(out_);
}

void SweepProgress::close() {
  if (terminal_) {
    draw(0);
    std::fprintf(out_, "\n");
  }
  std::fflush(out_);
}

}  // namespace tpusim::cli
