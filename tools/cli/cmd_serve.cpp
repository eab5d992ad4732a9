// tpusim serve STUDY.json: serve a language model's requests on the simulated machine (prefill
// and decode steps simulated, a scheduler composed from them): TTFT, TPOT, throughput, goodput.
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/serve/serve_run.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kServeRegister{[](CLI::App& app) {
  auto a = std::make_shared<serve::ServeArgs>();
  auto* cmd = app.add_subcommand(
      "serve", "Serve a study's requests (its \"serving\" object): TTFT, TPOT, throughput");
  cmd->add_option("study", a->study, "study JSON file with a \"serving\" object")->required();
  cmd->add_option("--set", a->sets,
                  "override a parameter: path.to.key=value (value as JSON, else a string)");
  cmd->add_flag("--json", a->json, "print the report as one JSON object");
  cmd->add_option("--timeline", a->timeline,
                  "write the steps and the slot and KV-cache occupancy as a Chrome trace event "
                  "file (Perfetto, chrome://tracing)");
  cmd->add_option("--out", a->out,
                  "write serve.json, requests.csv (each request's latencies) and occupancy.csv "
                  "into this folder");
  cmd->add_flag("--find-rate", a->find_rate,
                "find the highest Poisson rate whose p99 TTFT and TPOT meet serving.limits "
                "(MLPerf Server) and the throughput of all requests at once (Offline)");
  cmd->callback([a] { set_exit_code(serve::run_serve(*a)); });
}};

}  // namespace
}  // namespace tpusim::cli
