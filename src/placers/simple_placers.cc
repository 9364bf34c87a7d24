// The simple baselines: single devices, the expert, and random.
#include "placers/methods.h"
#include "util/random.h"

namespace devplace {

namespace {

// Everything on the first device of `kind` (or of the cluster, if it has
// none of that kind, saying so).
PlacerOutput PlaceOnFirstOfKind(const PlacementProblem& problem, DeviceKind kind) {
  std::vector<int32_t> devices = DevicesOfKind(problem.cluster, kind);
  PlacerOutput out;
  out.placement = SingleDevicePlacement(problem.graph, problem.cluster, devices.empty() ? 0 : devices.front());
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
  out.placement = ExpertPlacement(problem.graph, problem.cluster);
  return out;
}

PlacerOutput PlaceRandom(const PlacementProblem& problem) {
  Grouping groups = ConstraintGroups(problem.graph);
  Random random(problem.seed);
  std::vector<int32_t> device_of_group(groups.num_groups());
  for (int32_t g = 0; g < groups.num_groups(); ++g) {
    std::vector<int32_t> allowed;
    for (int32_t d = 0; d < problem.cluster.num_devices(); ++d) {
      if (groups.groups[g].device_kinds & MaskOf(problem.cluster.devices[d].kind)) allowed.push_back(d);
    }
    device_of_group[g] = allowed[random.Below(allowed.size())];
  }
  return {ExpandGroupPlacement(groups, device_of_group), ""};
}

}  // namespace devplace
