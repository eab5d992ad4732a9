#pragma once
// A timeline from a symmetric run (sim/collectives/symmetry.hpp): every core's timeline is its
// domain image's, and every link's load its image's. The cores asked for (SimOptions::
// traced_cores) are traced through their images in the domain: each span an image records goes
// to the sink once for every asked core it stands for, and each asked chip's links log through
// their images, so the timeline costs what the symmetric run costs plus its spans.
#include <map>
#include <memory>
#include <vector>

#include "sim/kernel/timeline.hpp"
#include "sim/run/link_usage.hpp"

namespace tpusim {

class Machine;
struct SymmetricRun;

/// Forwards an image core's spans to the asked cores it stands for; counters pass through.
class ImageTimeline final : public TimelineSink {
 public:
  explicit ImageTimeline(TimelineSink& out) : out_(out) {}
  void stands_for(int image, int core) { cores_of_[image].push_back(core); }
  void span(int core, int op_index, const std::string& name, const std::string& category,
            Duration start, Duration end) override;
  void counter(int chip, const std::string& track, const std::string& name, Duration at,
               double value) override {
    out_.counter(chip, track, name, at, value);
  }

 private:
  TimelineSink& out_;
  std::map<int, std::vector<int>> cores_of_;
};

/// What a symmetric run traces for a timeline of `traced_cores`.
struct DomainTrace {
  std::unique_ptr<ImageTimeline> sink;  ///< the cores' sink while the kernel runs
  std::vector<bool> traced;             ///< per core: an image whose spans are recorded
  LinkLogs logs;                        ///< the asked chips' links (filled by copy_image_logs)
  LinkLogs image_logs;                  ///< their images in the domain, logged while running
  std::map<NetworkLink*, NetworkLink*> image_of;  ///< asked link -> its image
};

/// Sets up the tracing of `traced_cores` through their images (the images' links log).
std::unique_ptr<DomainTrace> trace_domain_images(const Machine& machine, const SymmetricRun& run,
                                                 TimelineSink& out,
                                                 const std::vector<int>& traced_cores);
/// After the run: each asked link's log is its image's.
void copy_image_logs(DomainTrace& t);

}  // namespace tpusim
