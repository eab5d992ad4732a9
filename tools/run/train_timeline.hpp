#pragma once
// The whole-run timeline of `tpusim train --timeline`: beside the chips' tracks of the simulated
// device loop (shifted to start after the program start), a "run" process with the start-up, one
// labelled span per device loop (the steps the composition repeats) and the loop round trips, and
// a host process with the host-side evaluation metric of every evaluation. docs/cli.md.
#include "models/train_schedule.hpp"
#include "tools/report/timeline_writer.hpp"

namespace tpusim::cli {

/// Adds the composed run's tracks to `trace` (processes numbered after the `chips` chips) and
/// shifts the simulated device spans by the program start. The spans follow the composition of
/// models/train_schedule.hpp, so the last one ends at t.total_s.
void add_run_tracks(TimelineWriter& trace, const TrainSchedule& s, const TimeToTrain& t,
                    const HostEvalTiming& h, int chips);

}  // namespace tpusim::cli
