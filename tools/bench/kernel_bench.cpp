// The bare SystemC kernel's ceiling on this machine: N SC_METHOD processes, each re-notifying its
// own event a fixed simulated time later, with nothing else to do. tpusim's event rate is quoted
// as a fraction of this. Usage: tpusim_kernel_bench [processes] [activations per process]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <systemc>
#include <vector>

namespace {
std::uint64_t g_activations = 0;

class Ticker : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Ticker);
  Ticker(sc_core::sc_module_name name, int rounds) : sc_core::sc_module(name), left_(rounds) {
    SC_METHOD(tick);
    sensitive << ev_;
  }

 private:
  void tick() {
    ++g_activations;
    if (--left_ > 0) ev_.notify(1, sc_core::SC_NS);
  }
  sc_core::sc_event ev_;
  int left_;
};
}  // namespace

extern "C" int sc_main(int, char**) { return 0; }

int main(int argc, char** argv) {
  setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
  const int n = argc > 1 ? std::atoi(argv[1]) : 8192;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 200;
  std::vector<std::unique_ptr<Ticker>> tickers;
  for (int i = 0; i < n; ++i)
    tickers.push_back(std::make_unique<Ticker>(("t" + std::to_string(i)).c_str(), rounds));
  const auto t0 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "{\"processes\": %d, \"activations\": %llu, \"wall_s\": %.4f, \"activations_per_s\": %.0f}\n",
      n, static_cast<unsigned long long>(g_activations), s, g_activations / s);
  return 0;
}
