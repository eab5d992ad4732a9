#include "sim/run/run_progress.hpp"

#include <algorithm>

#include "sim/core/tensor_core.hpp"
#include "sim/kernel/event_queue.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {

RunProgress::RunProgress(const Machine& machine, const Program& program, std::FILE* out,
                         double interval_s, std::vector<Duration> expected)
    : machine_(machine),
      program_(program),
      out_(out),
      interval_s_(interval_s),
      expected_(std::move(expected)),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

RunProgress::~RunProgress() {
  if (lines_ > 0) {
    std::fputs("\r\033[K", out_);  // the report follows on a clean line
    std::fflush(out_);
  }
}

void RunProgress::tick() {
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_).count() < interval_s_) return;
  last_ = now;
  // The slowest core bounds the step: the ops it is through are the fraction done. A collective
  // it has issued is not through; it counts as the part of its expected time that has passed
  // (at most 99 %), so a Program of one long collective still shows how far it is.
  const double ops = std::max<double>(1, static_cast<double>(program_.ops.size()));
  const Duration t = sim_now();
  double done = 1;
  int slowest = static_cast<int>(program_.ops.size());
  for (int c = 0; c < machine_.num_cores(); ++c) {
    if (!machine_.has_core(c) || machine_.core(c).finished()) continue;
    const TensorCore& core = machine_.core(c);
    const auto& out = core.outstanding();
    double through = core.pc() - static_cast<double>(out.size());
    for (std::size_t k = 0; k < out.size(); ++k) {
      const auto op = static_cast<std::size_t>(out[k]);
      const Duration want = op < expected_.size() ? expected_[op] : Duration{};
      if (want.ps() > 0)
        through += std::min(0.99, static_cast<double>((t - core.issued_at()[k]).ps()) /
                                      static_cast<double>(want.ps()));
    }
    if (through / ops < done) {
      done = through / ops;
      slowest = std::max(0, static_cast<int>(core.pc() - out.size()));
    }
  }
  done = std::clamp(done, 0.0, 1.0);
  const double wall = std::chrono::duration<double>(now - start_).count();
  std::fprintf(out_,
               "\r\033[Ktpusim: simulated %.3f ms; slowest core at op %d of %zu (%.0f %%); %.0f s",
               t.seconds() * 1e3, slowest, program_.ops.size(), 100 * done, wall);
  if (done > 0) std::fprintf(out_, ", about %.0f s left", wall * (1 - done) / done);
  std::fflush(out_);
  ++lines_;
}

}  // namespace tpusim
