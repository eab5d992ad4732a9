// The tpusim command. The only place that reads argv and decides exit codes:
// 0 success, 1 a run that failed or drifted, 2 bad input (one line naming what and what is
// allowed).
#include "tools/cli/cli.hpp"

int main(int argc, char** argv) { return tpusim::cli::main(argc, argv); }
