// tpusim run STUDY.json: build the model's SPMD Program and play it on the simulated machine.
// tpusim serve STUDY.json: serve a language model's requests on the simulated machine (prefill
// and decode steps simulated, a scheduler composed from them): TTFT, TPOT, throughput, goodput.
// (Registered here: the folder holds at most 25 source files.)
#include <CLI/CLI.hpp>
#include <memory>

#include "core/errors.hpp"
#include "tools/cli/commands.hpp"
#include "tools/run/study_run.hpp"
#include "tools/serve/serve_run.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kRunRegister{[](CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Simulate one training step of a study");
  cmd->add_option("study", a->study, "study JSON file")->required();
  cmd->add_option("--set", a->sets,
                  "override a parameter: path.to.key=value (value as JSON, else a string)");
  cmd->add_flag("--json", a->json, "print the report as one JSON object");
  cmd->add_option(
      "--timeline", a->timeline,
      "write a Chrome trace event file (Perfetto, chrome://tracing); gzip-compressed if "
      "the name ends in .gz");
  cmd->add_option("--record-trace", a->record_trace,
                  "write the step's SPMD Program as a trace (.json or .json.gz) for tpusim replay");
  cmd->add_option("--timeline-all-up-to", a->timeline_all_up_to,
                  "trace every core when there are at most this many, else a sample of 3 chips")
      ->check(CLI::Range(1, 1 << 20));
  auto* cores =
      cmd->add_option("--timeline-cores", a->timeline_cores,
                      "the cores the timeline records, e.g. 0,1,4096-4103 (default: every core up "
                      "to --timeline-all-up-to, else the first, a middle and the last chip's)");
  cmd->add_option("--profile", a->profile,
                  "write the op profile into this folder: profile.html (roofline, step "
                  "breakdown, op and layer tables; open in a browser) and profile.json");
  cmd->add_option("--links-csv", a->links_csv,
                  "write every link's bytes, busy time and utilisation as CSV");
  cmd->add_option("--stats", a->stats,
                  "write every module's statistics (named as the module tree: "
                  "multipod.chip(0,0).core0.hbm.bytes_read, ...) as JSON");
  auto* top = cmd->add_option("--top", a->top,
                              "how many ops to list by time; also prints compute by op class")
                  ->check(CLI::Range(0, 100000));
  cmd->add_flag("--allow-oom", a->allow_oom,
                "simulate a program whose peak memory exceeds the HBM capacity (the report says "
                "out_of_memory: true) instead of stopping with exit code 1");
  cmd->add_option("--program", a->program,
                  "play this compiled Program instead of building it: the file `tpusim plan` "
                  "writes for the study of a layout it simulates (points/ID.program)");
  cmd->callback([a, top, cores] {
    a->op_classes = top->count() > 0;
    if (cores->count() > 0 && a->timeline_cores.empty())
      throw ConfigError("--timeline-cores", "is empty; list core ids and ranges, e.g. 0,1,8-15");
    set_exit_code(run_study(*a));
  });
}};

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
  cmd->add_option("--space", a->space,
                  "with --find-rate: search the configurations PATH=V1,V2,... (one key each, e.g. "
                  "serving.max_num_seqs=32,64 workload.quantization=int8,bf16) and "
                  "rank them by Server rate, then Offline throughput (repeatable)");
  cmd->callback([a] { set_exit_code(serve::run_serve(*a)); });
}};

}  // namespace
}  // namespace tpusim::cli
