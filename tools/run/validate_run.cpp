#include "tools/run/validate_run.hpp"

#include <iostream>
#include <nlohmann/json.hpp>

#include "compiler/compiler.hpp"
#include "models/workload.hpp"
#include "tools/report/memory_report.hpp"
#include "tools/report/run_report.hpp"
#include "tools/study/study.hpp"

namespace tpusim::cli {

int validate_study(const std::string& study_path, const std::vector<std::string>& sets,
                   bool as_json) {
  Study study = load_study_file(study_path, sets, LayoutChecks::Program);
  Topology topology(study.topology);
  Program program = compiled_program(study.config, topology, study.hardware);
  const TimedMemory memory = analyze_timed(program, study.hardware.hbm_bytes_per_core);
  const bool fits = memory.profile.fits();
  if (as_json) {
    const nlohmann::json out = {{"study", study_path},
                                {"model", program.model},
                                {"topology", topology.describe()},
                                {"chips", topology.num_chips() * topology.slices()},
                                {"cores", static_cast<long long>(topology.num_chips()) *
                                              topology.slices() * study.hardware.devices_per_chip},
                                {"layout", layout_string(program, study.config)},
                                {"ops", program.ops.size()},
                                {"collectives", program.num_collectives()},
                                {"fits_memory", fits},
                                {"memory", memory_json(memory.profile, memory.seconds)},
                                {"config", study.config.json()}};
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << (fits ? "ok: " : "out of memory: ") << study_path << ": " << program.model
              << " on " << topology.describe() << ", " << layout_string(program, study.config)
              << ", " << program.ops.size() << " ops (" << program.num_collectives()
              << " collectives)\n";
    print_memory(std::cout, memory_json(memory.profile, memory.seconds));
  }
  if (!fits) {
    std::cerr << "tpusim: out of memory: " << describe_oom(memory.profile) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tpusim::cli
