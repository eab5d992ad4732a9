#pragma once
// The process that simulates a serve's step shapes (docs/serving.md, "Speed"). SystemC
// elaborates one design per process, so each shape is built, compiled and simulated in a process
// of its own. Forking those from the serve's process would copy its growing memory's page tables
// each time and make the serve fault again on every page it writes after each fork
// (copy-on-write). Instead the serve forks this worker once, while its memory is small, and the
// worker, which writes almost nothing, forks one child per shape. The child allocates from a
// fresh jemalloc arena (when the executable has jemalloc), so its memory comes on new
// transparent huge pages instead of copies of the worker's 4 KiB pages. It sends back the step's
// seconds, or its error (a ConfigError with its problems, or another error's message).
#include <sys/types.h>

#include <functional>

namespace tpusim::serve {

/// One step shape: a decode step (`tokens` 1) or a prefill step, `kv` cached tokens.
struct StepShape {
  bool decode = true;
  long long batch = 0, tokens = 0, kv = 0;
};

class ShapeWorker {
 public:
  /// What simulates one shape, in a child of the worker: returns the step's seconds; may throw
  /// ConfigError or any std::exception. It sees the memory as it was when the worker was forked.
  using SimulateOne = std::function<double(const StepShape&)>;

  /// Forks the worker.
  explicit ShapeWorker(SimulateOne simulate_one);
  ShapeWorker(const ShapeWorker&) = delete;
  ShapeWorker& operator=(const ShapeWorker&) = delete;
  /// Ends the worker (asks it to exit, closes its pipes) and waits for it.
  ~ShapeWorker();

  /// The shape's step seconds. Throws ConfigError (with the problems the child found) or
  /// std::runtime_error.
  double simulate(const StepShape& shape);

 private:
  [[noreturn]] void serve_requests();
  pid_t pid_ = -1;
  int to_worker_ = -1, from_worker_ = -1;
  SimulateOne simulate_one_;
};

}  // namespace tpusim::serve
