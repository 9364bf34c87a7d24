// The simple baselines: single devices, the expert, and random.
#include <span>
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

// Whether a route from or to device a runs at the speeds of the one for b.
bool SameRouteSpeeds(const Cluster& cluster, std::span<const Hop> x, std::span<const Hop> y) {
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!SameLinkSpeed(cluster.links[x[i].link], cluster.links[y[i].link])) return false;
  }
  return true;
}

// Whether a one-device step gives the same simulation on device a as on b
// (of one kind): the same specification, op times, and routes to and from
// every device of another kind, where the ops their kind cannot run go
// (SingleDevicePlacement, KeepColocated). Only a or b sends in such a
// step, so shared buses, which stop exact::InterchangeableDevices
// relabelling whole placements, do not matter here.
bool SameForOneDeviceStep(const PlacementProblem& problem, int32_t a, int32_t b) {
  const Cluster& cluster = problem.cluster;
  if (!SameDevice(cluster.devices[a], cluster.devices[b])) return false;
  for (int32_t x = 0; x < cluster.num_devices(); ++x) {
    if (cluster.devices[x].kind == cluster.devices[a].kind) continue;
    if (!SameRouteSpeeds(cluster, cluster.Route(a, x), cluster.Route(b, x)) ||
        !SameRouteSpeeds(cluster, cluster.Route(x, a), cluster.Route(x, b))) {
      return false;
    }
  }
  // Same specification and no table entry of a device's own: the same op
  // times, without a pass over a million ops per device.
  if (!problem.cost.measured().has_device_entries()) return true;
  for (const Op& op : problem.graph.ops()) {
    if (problem.cost.OpTimeUs(op, a) != problem.cost.OpTimeUs(op, b)) return false;
  }
  return true;
}

// Everything on the fastest device of `kind` (or on the cluster's first, if
// it has none of that kind, saying so). Devices of one kind usually run
// alike, and then it is the first; but a profile can time two vCPUs of one
// VM 1.1x to 1.4x apart (per-device op-times entries), and the baseline a
// user compares against is the best one device does. Those that differ from
// the first are simulated; a run that fits beats one that does not, ties
// go to the lower index.
PlacerOutput PlaceOnFastestOfKind(const PlacementProblem& problem, DeviceKind kind) {
  std::vector<int32_t> devices = DevicesOfKind(problem.cluster, kind);
  PlacerOutput out;
  const int32_t first = devices.empty() ? 0 : devices.front();
  out.placement = KeepColocated(problem, SingleDevicePlacement(problem.graph, problem.cluster, first));
  if (devices.empty()) {
    out.note = std::string("the cluster has no ") + DeviceKindName(kind) + "; used " + problem.cluster.devices[0].name;
    return out;
  }
  std::vector<int32_t> others;
  for (int32_t d : devices) {
    if (d != first && !SameForOneDeviceStep(problem, first, d)) others.push_back(d);
  }
  if (others.empty()) return out;
  SimResult best = problem.simulator.Run(out.placement);
  out.evaluations = 1;
  int32_t chosen = first;
  for (int32_t d : others) {
    Placement placement = KeepColocated(problem, SingleDevicePlacement(problem.graph, problem.cluster, d));
    SimResult result = problem.simulator.Run(placement);
    ++out.evaluations;
    const bool better =
        (result.ok() && !best.ok()) || (result.ok() == best.ok() && result.step_time_us < best.step_time_us);
    if (better) {
      best = std::move(result);
      out.placement = std::move(placement);
      chosen = d;
    }
  }
  if (chosen != first) {
    out.note = "on " + ForMessage(problem.cluster.devices[chosen].name) + ", the fastest " + DeviceKindName(kind) +
               " here for a one-device step";
  }
  return out;
}

}  // namespace

PlacerOutput PlaceSingleCpu(const PlacementProblem& problem) { return PlaceOnFastestOfKind(problem, DeviceKind::kCpu); }
PlacerOutput PlaceSingleGpu(const PlacementProblem& problem) { return PlaceOnFastestOfKind(problem, DeviceKind::kGpu); }

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
