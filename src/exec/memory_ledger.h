// The executor's memory accounting, per device, by the simulator's rules
// (docs/simulator.md): the graph's byte counts, not the allocator's. An
// allocation that would take a device past its usable memory is refused,
// so that a placement too big for the machine stops before it is made.
#pragma once

#include <cstdint>
#include <vector>

#include "cluster/cluster.h"
#include "sim/simulator.h"  // MemoryEvent, SaturatingAddBytes

namespace devplace {

class MemoryLedger {
 public:
  MemoryLedger(const Cluster& cluster, bool record_events);

  // Adds `bytes` to `device` at `time_us`. False when that would pass its
  // usable memory: then nothing is added, the device is marked out of
  // memory, and its peak records what it asked for (so a report says by
  // how much).
  bool Allocate(int32_t device, int64_t bytes, double time_us);
  void Free(int32_t device, int64_t bytes, double time_us);

  int64_t in_use(int32_t device) const { return in_use_[device]; }
  int64_t peak(int32_t device) const { return peak_[device]; }
  bool oom(int32_t device) const { return oom_[device]; }
  std::vector<MemoryEvent>& events() { return events_; }

 private:
  void Record(int32_t device, double time_us);

  const Cluster* cluster_;
  bool record_events_;
  std::vector<int64_t> in_use_, peak_;
  std::vector<bool> oom_;
  std::vector<MemoryEvent> events_;
};

}  // namespace devplace
