// The simple baselines: single devices, the expert, and random.
#include <stdexcept>

#include "placers/methods.h"
#include "util/error.h"
#include "util/random.h"

namespace devplace {

namespace {

bool CanRunKinds(const Cluster& cluster, int32_t d, DeviceKindMask kinds) {
  return (kinds & MaskOf(cluster.devices[d].kind)) != 0;
}

// Puts each co-location group of `placement` on one device that can run all
// of it: the one its first member got if it can, else the first of its
// members' devices that can, else the first device of the cluster that can.
// Placements built op by op (single device with the CPU for ops without a
// GPU kernel, the expert's stages) otherwise split a group whose members
// differ in where they may run.
Placement KeepColocated(const PlacementProblem& problem, Placement placement) {
  const Cluster& cluster = problem.cluster;
  for (const Group& group : ConstraintGroups(problem.graph).groups) {
    if (group.ops.size() < 2) continue;
    int32_t device = -1;
    for (int32_t op : group.ops) {
      if (CanRunKinds(cluster, placement[op], group.device_kinds)) {
        device = placement[op];
        break;
      }
    }
    for (int32_t d = 0; d < cluster.num_devices() && device < 0; ++d) {
      if (CanRunKinds(cluster, d, group.device_kinds)) device = d;
    }
    if (device < 0) continue;  // CheckClusterCanRun rules this out
    for (int32_t op : group.ops) placement[op] = device;
  }
  return placement;
}

// Everything on the first device of `kind` (or of the cluster, if it has
// none of that kind, saying so).
PlacerOutput PlaceOnFirstOfKind(const PlacementProblem& problem, DeviceKind kind) {
  std::vector<int32_t> devices = DevicesOfKind(problem.cluster, kind);
  PlacerOutput out;
  out.placement =
      KeepColocated(problem, SingleDevicePlacement(problem.graph, problem.cluster, devices.empty() ? 0 : devices.front()));
  if (devices.empty()) {
    out.note = std::string("the cluster has no ") + DeviceKindName(kind) + "; used " + problem.cluster.devices[0].name;
  }
  return out;
}

}  // namespace

PlacerOutput PlaceSingleCpu(const PlacementProblem& problem) { return PlaceOnFirstOfKind(problem, DeviceKind::kCpu); }
PlacerOutput PlaceSingleGpu(const PlacementProblem& problem) { return PlaceOnFirstOfKind(problem, DeviceKind::kGpu); }

PlacerOutput PlaceExpert(const PlacementProblem& problem) {
  PlacerOutput out;
  if (problem.graph.expert_stages <= 0) {
    out = PlaceSingleGpu(problem);
    out.note = "the graph carries no expert placement; this is single_gpu";
    return out;
  }
  out.placement = KeepColocated(problem, ExpertPlacement(problem.graph, problem.cluster));
  return out;
}

PlacerOutput PlaceRandom(const PlacementProblem& problem) {
  Grouping groups = ConstraintGroups(problem.graph);
  Random random(problem.seed);
  std::vector<int32_t> device_of_group(groups.num_groups());
  for (int32_t g = 0; g < groups.num_groups(); ++g) {
    std::vector<int32_t> allowed;
    for (int32_t d = 0; d < problem.cluster.num_devices(); ++d) {
      if (CanRunKinds(problem.cluster, d, groups.groups[g].device_kinds)) allowed.push_back(d);
    }
    // Only a caller that skipped CheckClusterCanRun gets here with none.
    if (allowed.empty()) {
      CheckClusterCanRun(problem.graph, problem.cluster);
      throw std::logic_error("random: group '" + ForMessage(groups.groups[g].name) + "' has no device");
    }
    device_of_group[g] = allowed[random.Below(allowed.size())];
  }
  return {ExpandGroupPlacement(groups, device_of_group), ""};
}

}  // namespace devplace
