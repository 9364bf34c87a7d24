// The simulated step as an SVG timeline: a lane per device (more where a
// device runs ops side by side) with its ops shaded by phase, and a lane per
// link channel with its transfers coloured by destination device.
#pragma once

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "sim/simulator.h"

namespace devplace {

struct TimelineOptions {
  double plot_width_px = 1000;
  // Neighbouring events of one kind on one lane closer than this many
  // pixels are drawn as one block, so a step of 100,000 ops stays a few
  // thousand shapes; a block's tooltip says how many ops it holds.
  // Negative: events that touch stay apart too.
  double merge_gap_px = 0.75;
};

// `result` must come from a run with record_events; `colors` has one colour
// per device (DeviceColors).
std::string TimelineSvg(const Graph& graph, const Cluster& cluster, const SimResult& result,
                        const std::vector<std::string>& colors, const TimelineOptions& options = {});

}  // namespace devplace
