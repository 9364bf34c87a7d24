// Measures how long a tensor takes to move between two CPU devices of this
// machine, the way the executor moves one: a thread pinned to the sender's
// cores has just written it, a thread pinned to the receiver's cores wakes,
// allocates fresh memory and copies it there. `clusters --detect` fits a
// link's latency and bandwidth to these times.
#pragma once

#include <cstdint>
#include <vector>

namespace devplace {

struct CopySample {
  int64_t bytes = 0;
  double time_us = 0;
};

struct LinkFit {
  double latency_us = 0;
  double bandwidth_bytes_per_s = 0;
};

// time = latency + bytes / bandwidth, fitted by least squares on relative
// error (so a 4 KiB copy counts as much as a 16 MiB one); the latency is
// kept at or above 0, and a fit whose slope is not positive (noise) falls
// back to the largest sample's bytes over its time. `samples` must hold at
// least one sample with positive bytes and time.
LinkFit FitLink(const std::vector<CopySample>& samples);

// One sample per size: the fastest of `repeats` hand-overs, each of a
// buffer freshly written by a thread on `from` into memory first touched by
// a thread on `to` (empty: unpinned).
std::vector<CopySample> MeasureCopies(const std::vector<int32_t>& from, const std::vector<int32_t>& to,
                                      const std::vector<int64_t>& sizes_bytes, int32_t repeats);

// Memory traffic (bytes read plus bytes written) per second of a thread
// on `cores` copying between two buffers it has already touched: what the
// cost model's memory bandwidth stands for.
double MeasureMemoryBandwidth(const std::vector<int32_t>& cores);

}  // namespace devplace
