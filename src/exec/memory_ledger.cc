#include "exec/memory_ledger.h"

#include <algorithm>
#include <cassert>

namespace devplace {

MemoryLedger::MemoryLedger(const Cluster& cluster, bool record_events)
    : cluster_(&cluster),
      record_events_(record_events),
      in_use_(cluster.num_devices(), 0),
      peak_(cluster.num_devices(), 0),
      oom_(cluster.num_devices(), false) {}

bool MemoryLedger::Allocate(int32_t device, int64_t bytes, double time_us) {
  assert(bytes >= 0);
  if (bytes == 0) return true;
  const int64_t wanted = SaturatingAddBytes(in_use_[device], bytes);
  if (wanted > cluster_->devices[device].usable_memory_bytes()) {
    oom_[device] = true;
    peak_[device] = std::max(peak_[device], wanted);
    return false;
  }
  in_use_[device] = wanted;
  peak_[device] = std::max(peak_[device], wanted);
  Record(device, time_us);
  return true;
}

void MemoryLedger::Free(int32_t device, int64_t bytes, double time_us) {
  if (bytes == 0) return;
  in_use_[device] -= bytes;
  assert(in_use_[device] >= 0);
  Record(device, time_us);
}

void MemoryLedger::Record(int32_t device, double time_us) {
  if (record_events_) events_.push_back({device, time_us, in_use_[device]});
}

}  // namespace devplace
