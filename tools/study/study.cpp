#include "tools/study/study.hpp"

#include <cctype>
#include <optional>
#include <set>

#include "core/errors.hpp"
#include "core/params.hpp"
#include "models/train_schedule.hpp"
#include "models/workload.hpp"

namespace tpusim::cli {
namespace {

Study study_of(Config config, const std::string& source) {
  Study s;
  s.source = source;
  s.config = std::move(config);
  s.hardware = HardwareSpec::from_config(s.config);
  s.topology = topology_from_json(*json_at(s.config.json(), "topology"), "topology");
  return s;
}

// `a` and `b` are one path, or one is a section that holds the other.
bool overlap(const std::string& a, const std::string& b) {
  return a == b || path_within(a, b) || path_within(b, a);
}

// `text` names `path` (or a parameter under it): not as part of a longer name.
bool mentions(const std::string& text, const std::string& path) {
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (auto at = text.find(path); at != std::string::npos; at = text.find(path, at + 1)) {
    const std::size_t end = at + path.size();
    const bool starts = at == 0 || !(name_char(text[at - 1]) || text[at - 1] == '.');
    if (starts && (end == text.size() || !name_char(text[end]))) return true;
  }
  return false;
}

// What every layout check counts with (the cores, the replica's shape), and what picks the program
// and batch that are checked. The messages name these values without their paths ("the 32 cores",
// "model 1 x spatial 1"), so a stand-in for one of them could cause any layout problem.
const char* const kLayoutInputs[] = {
    "topology",
    "hardware.cores_per_chip",
    "parallelism.model",
    "parallelism.model2",
    "parallelism.sequence",
    "parallelism.spatial",
    "parallelism.spatial_w",
    "parallelism.slices",
    "parallelism.bn_group_cores",
    "workload.program",
    "workload.eval_batch",
};

// What the training schedule counts with: its messages give steps computed from these without
// naming them ("25 steps between evaluations").
const char* const kScheduleInputs[] = {"train", "workload.global_batch"};

// A config problem is at, under or around one of `inputs`.
template <std::size_t N>
bool touches(const std::vector<Problem>& problems, const char* const (&inputs)[N]) {
  for (const auto& p : problems)
    for (const char* input : inputs)
      if (overlap(p.where, input)) return true;
  return false;
}

// The layout problems of `stand_in` that none of its stand-in values can have caused.
std::vector<Problem> stand_in_layout_problems(const Config& stand_in, LayoutChecks checks,
                                              const std::vector<Problem>& config_problems) {
  if (touches(config_problems, kLayoutInputs)) return {};
  std::vector<Problem> found;
  auto check = [&](auto&& build) {
    try {
      build();
    } catch (const ConfigError& e) {
      found.insert(found.end(), e.problems().begin(), e.problems().end());
    }
  };
  try {
    const Study s = study_of(stand_in, "(stand-in)");
    const Topology topology(s.topology);
    if (checks == LayoutChecks::Program) {
      check([&] { build_program(s.config, topology, s.hardware); });
    } else {  // as tpusim train and its sweep points: the schedule, then both programs
      if (!touches(config_problems, kScheduleInputs)) check([&] { read_train_schedule(s.config); });
      check([&] { build_program_of(s.config, topology, s.hardware, ProgramKind::Train); });
      check([&] { build_program_of(s.config, topology, s.hardware, ProgramKind::Eval); });
    }
  } catch (...) {  // the stand-in's hardware or topology, or a failure that is not bad input
    return {};
  }
  std::vector<Problem> out;
  std::set<std::string> seen;  // the training and eval programs share most checks
  for (const auto& p : found) {
    bool artefact = false;
    for (const auto& c : config_problems)
      artefact = artefact || overlap(p.where, c.where) || mentions(p.what, c.where);
    if (!artefact && seen.insert(p.line()).second) out.push_back(p);
  }
  return out;
}

}  // namespace

Study load_study(const nlohmann::json& doc, const std::vector<std::string>& sets,
                 const std::string& source, LayoutChecks checks) {
  if (checks == LayoutChecks::None) return study_of(load_config(doc, sets), source);
  ConfigCheck c = check_config(doc, sets);
  if (c.problems.empty()) return study_of(std::move(c.config), source);
  std::vector<Problem> problems = c.problems;
  if (c.stand_in) {
    const auto layout = stand_in_layout_problems(*c.stand_in, checks, c.problems);
    problems.insert(problems.end(), layout.begin(), layout.end());
  }
  throw ConfigError(std::move(problems));
}

Study load_study_file(const std::string& path, const std::vector<std::string>& sets,
                      LayoutChecks checks) {
  return load_study(read_json_file(path), sets, path, checks);
}

}  // namespace tpusim::cli
