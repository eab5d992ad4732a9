#include "sim/run/timeline_images.hpp"

#include <unordered_map>

#include "sim/collectives/symmetry.hpp"
#include "sim/machine/machine.hpp"

namespace tpusim {

void ImageTimeline::span(int core, int op_index, const std::string& name,
                         const std::string& category, Duration start, Duration end) {
  const auto it = cores_of_.find(core);
  if (it == cores_of_.end()) return;
  for (int c : it->second) out_.span(c, op_index, name, category, start, end);
}

std::unique_ptr<DomainTrace> trace_domain_images(const Machine& machine, const SymmetricRun& run,
                                                 TimelineSink& out,
                                                 const std::vector<int>& traced_cores) {
  auto t = std::make_unique<DomainTrace>();
  t->sink = std::make_unique<ImageTimeline>(out);
  t->traced.assign(static_cast<std::size_t>(machine.num_cores()), false);
  const auto& links = machine.links();
  std::unordered_map<const NetworkLink*, std::size_t> index;
  index.reserve(links.size());
  for (std::size_t i = 0; i < links.size(); ++i) index.emplace(links[i], i);
  std::vector<bool> chip_done(static_cast<std::size_t>(machine.topology().num_chips()), false);
  for (int c : traced_cores) {
    if (c < 0 || c >= machine.num_cores()) continue;
    const int image = run.core_rep[static_cast<std::size_t>(c)];
    t->traced[static_cast<std::size_t>(image)] = true;
    t->sink->stands_for(image, c);
    const int chip = machine.chip_of(c);
    if (chip_done[static_cast<std::size_t>(chip)]) continue;
    chip_done[static_cast<std::size_t>(chip)] = true;
    for (NetworkLink* l : machine.links_of_chip(chip)) {
      NetworkLink* img = links[static_cast<std::size_t>(run.link_rep[index.at(l)])];
      t->logs[l].chip = chip;
      t->image_of[l] = img;
      img->busy_log = &t->image_logs[img].intervals;
    }
  }
  return t;
}

void copy_image_logs(DomainTrace& t) {
  for (auto& [link, log] : t.logs) log.intervals = t.image_logs[t.image_of.at(link)].intervals;
}

}  // namespace tpusim
