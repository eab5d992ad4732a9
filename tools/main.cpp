// The tpusim command. The only place that reads argv and decides exit codes:
// 0 success, 1 a run that failed or drifted, 2 bad input (one line naming what and what is
// allowed).
#include "tools/cli/cli.hpp"

#ifdef TPUSIM_JEMALLOC
// The executable allocates with jemalloc (CMakeLists.txt, option TPUSIM_JEMALLOC), which reads its
// options from this symbol at start-up (jemalloc's manual, "malloc_conf"; the MALLOC_CONF
// environment variable still overrides it). Transparent huge pages for the heap and jemalloc's
// own metadata: a Multipod run touches about 100 MiB of small objects, and on 4 KiB pages the
// page faults alone were a quarter of its CPU time (README, "Benchmarks"). `tpusim plan` also
// keeps freed pages (tools/cli/cmd_plan.cpp).
extern "C" const char* malloc_conf;
const char* malloc_conf = "thp:always,metadata_thp:always";
#endif

int main(int argc, char** argv) { return tpusim::cli::main(argc, argv); }
