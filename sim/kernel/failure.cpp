#include "sim/kernel/failure.hpp"

#include <systemc>

namespace tpusim {
namespace {
std::exception_ptr g_failure;
}
void record_failure(std::exception_ptr e) {
  if (!g_failure) g_failure = e;
  sc_core::sc_stop();
}
std::exception_ptr take_failure() {
  auto e = g_failure;
  g_failure = nullptr;
  return e;
}
}  // namespace tpusim
