#include "cli/run_methods.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "sim/lower_bound.h"
#include "util/error.h"

namespace devplace {

void RequireEveryOpRunnable(const Graph& graph, const Cluster& cluster) {
  if (cluster.num_devices() == 0) throw Error("cluster " + ForMessage(cluster.name) + " has no devices");
  DeviceKindMask present = 0;
  for (const Device& d : cluster.devices) present |= MaskOf(d.kind);
  auto needs = [](DeviceKindMask kinds) {
    std::string text;
    for (int k = 0; k < kNumDeviceKinds; ++k) {
      const DeviceKind kind = static_cast<DeviceKind>(k);
      if (kinds & MaskOf(kind)) text += std::string(text.empty() ? "" : " or ") + DeviceKindName(kind);
    }
    return text;
  };
  // The kinds every member of each co-location group can run on.
  std::map<std::string, DeviceKindMask> group_kinds;
  for (const Op& op : graph.ops()) {
    if ((op.device_kinds & present) == 0) {
      throw Error("op '" + ForMessage(op.name) + "' can run on no device of cluster " + ForMessage(cluster.name) +
                  " (it needs a " + needs(op.device_kinds) + ")");
    }
    if (op.colocation_group.empty()) continue;
    auto [it, inserted] = group_kinds.emplace(op.colocation_group, kAllDeviceKinds);
    it->second &= op.device_kinds;
  }
  for (const auto& [name, kinds] : group_kinds) {
    if ((kinds & present) == 0) {
      throw Error("co-location group '" + ForMessage(name) + "' can run on no device of cluster " + ForMessage(cluster.name) +
                  " (its ops together need a " + needs(kinds) + ")");
    }
  }
}

std::vector<const PlacerInfo*> PlacersByName(const std::vector<std::string>& names) {
  std::vector<const PlacerInfo*> placers;
  if (names.empty()) {
    for (const PlacerInfo& p : ListPlacers()) placers.push_back(&p);
  } else {
    for (const std::string& name : names) placers.push_back(&FindPlacer(name));
  }
  return placers;
}

Comparison CompareMethods(const PlacementProblem& problem, const std::vector<const PlacerInfo*>& placers, bool progress) {
  RequireEveryOpRunnable(problem.graph, problem.cluster);
  Comparison comparison;
  comparison.graph_name = problem.graph.name;
  comparison.cluster_name = problem.cluster.name;
  comparison.num_ops = problem.graph.num_ops();
  comparison.bound = StepTimeLowerBound(problem.graph, problem.cluster, problem.cost);
  for (const PlacerInfo* placer : placers) {
    if (progress) std::fprintf(stderr, "placing with %s...\n", placer->name.c_str());
    MethodResult row;
    row.method = placer->name;
    auto start = std::chrono::steady_clock::now();
    PlacerOutput output = placer->place(problem);
    row.placer_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    row.note = output.note;
    row.sim = problem.simulator.Run(output.placement);
    row.placement = std::move(output.placement);
    comparison.methods.push_back(std::move(row));
  }
  return comparison;
}

}  // namespace devplace
