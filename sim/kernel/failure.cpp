#include "sim/kernel/failure.hpp"

#include <systemc>

namespace tpusim {
namespace {
std::exception_ptr g_failure;
}
void record_failure(std::exception_ptr e) {
  if (g_failure) return;  // the kernel is stopping already; a second sc_stop() would warn (W545)
  g_failure = e;
  sc_core::sc_stop();
}
std::exception_ptr take_failure() {
  auto e = g_failure;
  g_failure = nullptr;
  return e;
}
}  // namespace tpusim
