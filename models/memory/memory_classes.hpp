#pragma once
// What each memory class holds, its dtype and where in the Program it comes from: listed by
// `tpusim params --memory-classes` and in docs/memory.md.
#include <vector>

#include "models/program.hpp"

namespace tpusim {

struct MemoryClassInfo {
  MemoryClass cls;
  const char* dtype;   ///< "f32", "bf16", "grad_dtype", "mixed"
  const char* lives;   ///< "the whole step" or the lifetime along the program order
  const char* source;  ///< where the bytes come from
};

/// Every MemoryClass, in enum order.
const std::vector<MemoryClassInfo>& memory_classes();

}  // namespace tpusim
