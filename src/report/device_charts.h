// The report's per-device charts of one or two simulated placements, side by
// side as in Figures 8 and 9 of the 2017 paper: compute time with forward
// and backward apart, copy time, peak memory against capacity, and memory in
// use over the step.
#pragma once

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "sim/simulator.h"

namespace devplace {

// A simulated placement and what to call it under its bar.
struct LabelledResult {
  std::string label;
  const SimResult* result = nullptr;
};

// Stacked bars per device, a bar per placement: forward (light), backward
// (full colour), update and other (dark), in seconds.
std::string DeviceComputeChart(const Cluster& cluster, const std::vector<LabelledResult>& placements,
                               const std::vector<std::string>& colors);

// Copy time per device, a bar per placement: transfers arriving (full
// colour) and leaving (light), in seconds.
std::string DeviceCopyChart(const Cluster& cluster, const std::vector<LabelledResult>& placements,
                            const std::vector<std::string>& colors);

// Peak memory per device as a percentage of the memory its tensors may use,
// persistent (dark) and the rest of the peak (light), with a line at 100%.
std::string DeviceMemoryChart(const Cluster& cluster, const std::vector<LabelledResult>& placements,
                              const std::vector<std::string>& colors);

// Memory in use on each device over the step (percent of usable capacity
// against milliseconds), from a run with record_events.
std::string MemoryOverTimeChart(const Cluster& cluster, const SimResult& result, const std::vector<std::string>& colors);

}  // namespace devplace
