// libsystemc's own main() calls sc_main(); tpusim has its own main() and starts the kernel from
// simulate(), so this entry point is never used, but the shared library needs the symbol.
#include <cstdio>

extern "C" int sc_main(int, char**) {
  std::fputs("tpusim: sc_main is not an entry point; run build/bin/tpusim\n", stderr);
  return 3;
}
