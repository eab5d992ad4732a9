// SystemC's messages go to stderr, never into stdout where reports (--json) are written; a second
// failure in one run does not call sc_stop() again (which would warn W545).
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <systemc>

#include "sim/kernel/failure.hpp"
#include "sim/kernel/reports.hpp"
#include "tests/sim/sim_fixture.hpp"

using namespace tpusim;
using namespace tpusim::test;

namespace {
std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
/// Runs `f` in a child with stdout and stderr sent to files; their contents.
std::pair<std::string, std::string> outputs_of(const std::function<void()>& f) {
  const std::string out = "/tmp/tpusim_reports_out_" + std::to_string(::getpid());
  const std::string err = "/tmp/tpusim_reports_err_" + std::to_string(::getpid());
  in_child([&] {
    std::fflush(stdout);
    ::dup2(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
    ::dup2(::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
    f();
    std::cout.flush();
    std::fflush(stdout);
    return std::vector<double>{};
  });
  std::pair<std::string, std::string> r{read_all(out), read_all(err)};
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}
}  // namespace

TEST_CASE("SystemC warnings are displayed on stderr, not stdout") {
  const auto [out, err] = outputs_of([] {
    systemc_reports_to_stderr();
    SC_REPORT_WARNING("tpusim/test", "a warning of the kernel");
  });
  CHECK(out.empty());
  CHECK_THAT(err, Catch::Contains("a warning of the kernel") && Catch::Contains("Warning"));
}

TEST_CASE("a second failure in one run does not stop the kernel twice") {
  const auto [out, err] = outputs_of([] {
    systemc_reports_to_stderr();
    sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                            sc_core::SC_DO_NOTHING);
    struct Twice : sc_core::sc_module {
      explicit Twice(sc_core::sc_module_name n) : sc_core::sc_module(n) { SC_METHOD(fail); }
      void fail() {
        record_failure(std::make_exception_ptr(std::runtime_error("first")));
        record_failure(std::make_exception_ptr(std::runtime_error("second")));
      }
      SC_HAS_PROCESS(Twice);
    } twice("twice");
    sc_core::sc_start();
    try {
      std::rethrow_exception(take_failure());
    } catch (const std::runtime_error& e) {  // the first failure is the one kept
      if (std::string(e.what()) != "first") throw;
    }
  });
  CHECK(out.empty());
  CHECK_THAT(err, !Catch::Contains("W545") && !Catch::Contains("sc_stop"));
}
