// This machine as a cluster (`devplace clusters --detect`): CPU devices
// that each own a disjoint set of cores, and a device per CUDA GPU torch
// sees, with speeds and copy links measured rather than assumed.
#pragma once

#include <cstdint>

#include "cluster/cluster.h"

namespace devplace {

struct DetectOptions {
  int32_t cpu_devices = 1;   // the usable cores split this many ways
  bool gpus = true;          // one device per CUDA GPU torch sees
  int32_t copy_repeats = 7;  // hand-overs timed per copy size; the fastest counts
  int32_t wake_repeats = 60; // hand-overs timed per idle time; the median counts
};

// Throws Error when there are fewer usable cores than CPU devices.
//
// Each CPU device: its cores, `parallel_ops` one per core (the executor
// runs one op per core), an equal share of physical memory, a peak FLOP/s
// and memory bandwidth such that the cost model's default efficiencies
// give the measured single-thread matmul rate and copy traffic, and the
// cheapest kernel call as launch overhead, and the wake-up of its idle
// workers (exec/probes/wake_probe.h). Between every two devices a
// link whose latency and bandwidth are fitted to measured copies (the mean
// of the two directions).
Cluster DetectCluster(const DetectOptions& options);

}  // namespace devplace
