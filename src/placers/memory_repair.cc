#include "placers/memory_repair.h"

#include <algorithm>

namespace devplace {
namespace {

// What a group can add to a device's peak: its parameters and everything it
// writes. An over-estimate, which keeps moves on the safe side.
int64_t MemoryWeight(const Group& group) { return group.persistent_bytes + group.output_bytes; }

}  // namespace

Placement RepairMemory(const PlacementProblem& problem, const Grouping& grouping, std::vector<int32_t> device_of_group,
                       std::string& note) {
  const Cluster& cluster = problem.cluster;
  const int32_t D = cluster.num_devices();
  constexpr int kMaxRounds = 40;
  SimOptions options;  // deterministic; run to the end so every peak is known
  for (int round = 0; round < kMaxRounds; ++round) {
    Placement placement = ExpandGroupPlacement(grouping, device_of_group);
    SimResult result = problem.simulator.Run(placement, options);
    if (result.invalid || !result.oom) return placement;

    // The device furthest over its capacity gives up groups.
    int32_t worst = -1;
    int64_t worst_excess = 0;
    for (int32_t d = 0; d < D; ++d) {
      int64_t excess = result.devices[d].peak_memory_bytes - cluster.devices[d].usable_memory_bytes();
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = d;
      }
    }
    std::vector<int64_t> headroom(D);
    for (int32_t d = 0; d < D; ++d) {
      headroom[d] = cluster.devices[d].usable_memory_bytes() - result.devices[d].peak_memory_bytes;
    }
    // Move its last groups (the top of the model, in topological order) so
    // that what stays and what moves are each contiguous, as a person
    // splitting a model would.
    int64_t to_move = worst_excess + worst_excess / 5;
    int64_t moved = 0;
    for (int32_t g = grouping.num_groups() - 1; g >= 0 && moved < to_move; --g) {
      if (device_of_group[g] != worst) continue;
      const Group& group = grouping.groups[g];
      int64_t weight = MemoryWeight(group);
      if (weight == 0) continue;
      int32_t best = -1;
      for (int32_t d = 0; d < D; ++d) {
        if (d == worst || !(group.device_kinds & MaskOf(cluster.devices[d].kind))) continue;
        if (headroom[d] < weight) continue;
        // Prefer GPUs, then the most room.
        bool better_kind = best >= 0 && cluster.devices[d].kind == DeviceKind::kGpu &&
                           cluster.devices[best].kind != DeviceKind::kGpu;
        bool same_kind = best >= 0 && cluster.devices[d].kind == cluster.devices[best].kind;
        if (best < 0 || better_kind || (same_kind && headroom[d] > headroom[best])) best = d;
      }
      if (best < 0) continue;
      device_of_group[g] = best;
      headroom[best] -= weight;
      moved += weight;
    }
    if (moved == 0) {
      note = "does not fit in memory: " + cluster.devices[worst].name + " is over capacity and no group can move off it";
      return ExpandGroupPlacement(grouping, device_of_group);
    }
  }
  note = "does not fit in memory after " + std::to_string(kMaxRounds) + " rounds of moving groups";
  return ExpandGroupPlacement(grouping, device_of_group);
}

}  // namespace devplace
