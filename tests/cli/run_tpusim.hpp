#pragma once
// Runs build/bin/tpusim as a user would and captures stdout, stderr and the exit code.
#include <sys/resource.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

// Whether this test binary (and so the tpusim it runs, built with the same flags) has
// AddressSanitizer, whose allocator and shadow memory make a process's size no measure of
// tpusim's own.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

/// The peak resident memory of the largest child process this test has run and waited for, MiB.
inline double peak_child_rss_mib() {
  struct rusage usage {};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024;
}

struct TpusimResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  int err_lines() const {
    int n = 0;
    for (char c : err) n += c == '\n';
    return n;
  }
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs tpusim with `args` in the source tree (so relative config paths work), with the
/// environment assignments `env` ("NAME=value ...", already quoted) in front.
inline TpusimResult run_tpusim_env(const std::string& env, const std::vector<std::string>& args) {
  char tmpl[] = "/tmp/tpusim_cli_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string cmd =
      "cd " + shell_quote(TPUSIM_SOURCE_DIR) + " && " + env + " " + shell_quote(TPUSIM_BIN);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + dir + "/out 2>" + dir + "/err </dev/null";
  int status = std::system(cmd.c_str());
  TpusimResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(dir + "/out");
  r.err = slurp(dir + "/err");
  std::system(("rm -rf " + shell_quote(dir)).c_str());
  return r;
}

/// `args` followed by "--set S" for every S of `sets`.
inline std::vector<std::string> with_sets(std::vector<std::string> args,
                                          const std::vector<std::string>& sets) {
  for (const auto& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  return args;
}

/// Runs tpusim with `args` in the source tree (so relative config paths work).
inline TpusimResult run_tpusim(const std::vector<std::string>& args,
                               const std::string& stdin_text = "") {
  return run_tpusim_env("", args);
}

/// The serving tests' machine: the ~1.1 B decoder (20 layers, d_model 2048, d_ff 8192, GELU,
/// vocabulary 32768, tied) on one TPU v5e chip (int8 at twice the bf16 rate), collectives
/// synchronous. `tpusim COMMAND` with that study and its sets, then `extra`.
inline std::vector<std::string> one_v5e_decoder(const std::string& command,
                                                const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{command, "configs/studies/decoder_1b_16.json",
                                "--set", "preset=tpu_v5e",
                                "--set", "topology=1x1",
                                "--set", "parallelism.model=1",
                                "--set", "parallelism.fsdp=1",
                                "--set", "hardware.async_collectives=false"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}
