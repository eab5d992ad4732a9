// tpusim kernel: one compute op on one device, with time, achieved TFLOP/s and bytes/s, the
// bound resource and the cost terms.
#include <CLI/CLI.hpp>
#include <memory>

#include "tools/cli/commands.hpp"
#include "tools/run/kernel_run.hpp"

namespace tpusim::cli {
namespace {

const CommandRegistrar kKernelRegister{[](CLI::App& app) {
  auto args = std::make_shared<KernelArgs>();
  auto* cmd = app.add_subcommand("kernel", "Time one compute op on one device of a preset");
  cmd->add_option("--op", args->op, "matmul, conv, elementwise, reduction, attention")->required();
  cmd->add_option("--shape", args->shape,
                  "matmul M,N,K or B,M,N,K; conv N,H,W,Cin,Cout,KERNEL[,STRIDE]; elementwise "
                  "and reduction the dimensions; attention B,H,S,D")
      ->required();
  cmd->add_option("--dtype", args->dtype, "bf16, f32, int8 or fp8 (default bf16)");
  cmd->add_option("--preset", args->preset, "hardware preset, e.g. tpu_v3, tpu_v5e, tpu_v7");
  cmd->add_option("--set", args->sets, "override a parameter: path.to.key=value");
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->callback([args] { run_kernel(*args); });
}};

}  // namespace
}  // namespace tpusim::cli
