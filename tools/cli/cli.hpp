#pragma once
namespace tpusim::cli {
/// Parses the command line, runs the subcommand, maps errors to exit codes.
int main(int argc, char** argv);
}  // namespace tpusim::cli
