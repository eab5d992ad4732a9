#include "sim/run/run_progress.hpp"

#include <algorithm>

#include "sim/core/tensor_core.hpp"
#include "sim/kernel/event_queue.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {

RunProgress::RunProgress(const Machine& machine, const Program& program, std::FILE* out,
                         double interval_s)
    : machine_(machine),
      program_(program),
      out_(out),
      interval_s_(interval_s),
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
  // The slowest core bounds the step: its position in the Program is the fraction done.
  int slowest = static_cast<int>(program_.ops.size());
  for (int c = 0; c < machine_.num_cores(); ++c)
    if (machine_.has_core(c) && !machine_.core(c).finished())
      slowest = std::min(slowest, machine_.core(c).pc());
  const double ops = std::max<double>(1, static_cast<double>(program_.ops.size()));
  const double done = slowest / ops;
  const double wall = std::chrono::duration<double>(now - start_).count();
  std::fprintf(out_,
               "\r\033[Ktpusim: simulated %.3f ms; slowest core at op %d of %zu (%.0f %%); %.0f s",
               sim_now().seconds() * 1e3, slowest, program_.ops.size(), 100 * done, wall);
  if (done > 0) std::fprintf(out_, ", about %.0f s left", wall * (1 - done) / done);
  std::fflush(out_);
  ++lines_;
}

}  // namespace tpusim
