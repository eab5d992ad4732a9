#pragma once
// An exception inside a SystemC process would be wrapped into an sc_report by the kernel; the
// processes catch it instead, record it here and stop the kernel, and simulate() rethrows it
// unchanged. One simulation per process, so one slot per process.
#include <exception>

namespace tpusim {
void record_failure(std::exception_ptr e);
std::exception_ptr take_failure();

/// Runs `body`, recording any exception and stopping the kernel.
template <class F>
void guarded(F&& body) {
  try {
    body();
  } catch (...) {
    record_failure(std::current_exception());
  }
}
}  // namespace tpusim
