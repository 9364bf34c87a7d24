#include "placers/placer.h"

#include <algorithm>
#include <limits>

#include "placers/methods.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {

namespace {

using PlaceFunction = PlacerOutput (*)(const PlacementProblem&);

// `place` behind the check every placer needs, so that none of them has to
// cope with an op it has no device for.
std::function<PlacerOutput(const PlacementProblem&)> Checked(PlaceFunction place) {
  return [place](const PlacementProblem& problem) {
    CheckClusterCanRun(problem.graph, problem.cluster);
    return place(problem);
  };
}

// "cpu", "cpu or gpu": the kinds in `kinds`, for messages.
std::string KindNames(DeviceKindMask kinds) {
  std::string names;
  for (int k = 0; k < kNumDeviceKinds; ++k) {
    if (!(kinds & MaskOf(static_cast<DeviceKind>(k)))) continue;
    names += (names.empty() ? "" : " or ") + std::string(DeviceKindName(static_cast<DeviceKind>(k)));
  }
  return names.empty() ? "none" : names;
}

std::string CannotRunMessage(const std::string& what, DeviceKindMask kinds, const Cluster& cluster) {
  return what + " can run only on " + KindNames(kinds) + ", and cluster '" + ForMessage(cluster.name) +
         "' has none (its devices: " + KindNames(cluster.kinds_present()) + ")";
}

}  // namespace

const std::vector<PlacerInfo>& ListPlacers() {
  static const std::vector<PlacerInfo> placers = {
      {"single_cpu", "every op on the CPU", Checked(PlaceSingleCpu)},
      {"single_gpu", "every op on gpu:0; ops with no GPU kernel on the CPU", Checked(PlaceSingleGpu)},
      {"expert", "the human expert's layer-wise placement that comes with the model", Checked(PlaceExpert)},
      {"scotch", "Scotch static mapping onto all devices (compute and bytes as weights)", Checked(PlaceScotch)},
      {"mincut", "Scotch static mapping onto the GPUs only", Checked(PlaceMinCut)},
      {"metis", "METIS k-way partition, part weights by device speed", Checked(PlaceMetis)},
      {"m_topo", "Baechi m-TOPO: topological order, filling each device to its share", Checked(PlaceMTopo)},
      {"m_etf", "Baechi m-ETF: earliest task first list scheduling under memory limits", Checked(PlaceMEtf)},
      {"m_sct", "Baechi m-SCT: ETF keeping each op's favourite child on its device", Checked(PlaceMSct)},
      {"dp_split", "optimal contiguous split into device stages by dynamic programming over down-sets", Checked(PlaceDpSplit)},
      {"exact", "the optimum by branch and bound over the simulator (small graphs only)", Checked(PlaceExact), true},
      {"mcmc", "FlexFlow's MCMC search from the best one-shot baseline, incremental evaluation", Checked(PlaceMcmc), true},
      {"random", "each co-location group on a random device (seeded)", Checked(PlaceRandom)},
  };
  return placers;
}

void CheckClusterCanRun(const Graph& graph, const Cluster& cluster) {
  const DeviceKindMask present = cluster.kinds_present();
  for (const Op& op : graph.ops()) {
    if (!(op.device_kinds & present)) {
      throw Error(CannotRunMessage("op '" + ForMessage(op.name) + "'", op.device_kinds, cluster));
    }
  }
  // Co-location groups need no check of their own: Graph::Finalize made
  // sure each group's ops share a kind, and with two kinds a cluster that
  // has a kind for every op has the shared one too (it has both kinds, or
  // every op allows its one kind).
  static_assert(kNumDeviceKinds == 2, "with more kinds, check each co-location group's shared kinds too");
}

void CheckGroupsCanRun(const Graph& graph, const Cluster& cluster, const Grouping& grouping) {
  if (cluster.num_devices() == 0) throw Error("cluster '" + ForMessage(cluster.name) + "' has no devices");
  CheckClusterCanRun(graph, cluster);  // an op alone says it best
  const DeviceKindMask present = cluster.kinds_present();
  for (const Group& group : grouping.groups) {
    if (group.device_kinds & present) continue;
    throw Error(CannotRunMessage("the co-location group of op '" + ForMessage(graph.op(group.ops.front()).name) + "'",
                                 group.device_kinds, cluster));
  }
}

GroupingOptions GroupingOptionsFor(const Cluster& cluster) {
  GroupingOptions options;
  for (const Device& d : cluster.devices) {
    int64_t& bound = options.max_group_bytes_of_kind[static_cast<int>(d.kind)];
    bound = std::min(bound, std::max<int64_t>(d.usable_memory_bytes(), 0) / 2);
  }
  return options;
}

const PlacerInfo& FindPlacer(const std::string& name) {
  for (const PlacerInfo& p : ListPlacers()) {
    if (p.name == name) return p;
  }
  std::string names;
  for (const PlacerInfo& p : ListPlacers()) names += (names.empty() ? "" : ", ") + p.name;
  throw Error("unknown method '" + name + "' (known methods: " + names + ")");
}

Grouping ConstraintGroups(const Graph& graph) {
  GroupingOptions options;
  options.merge_single_consumer = false;
  return BuildGrouping(graph, options);
}

std::vector<std::string> OneShotBaselineNames() {
  std::vector<std::string> names;
  for (const PlacerInfo& placer : ListPlacers()) {
    if (!placer.search) names.push_back(placer.name);
  }
  return names;
}

std::vector<PlacerRun> RunPlacers(const PlacementProblem& problem, const std::vector<std::string>& names) {
  std::vector<PlacerRun> runs;
  for (const std::string& name : names) {
    // After a stop, the placements made so far are what there is; a search
    // stopped at once still gets one to start from (the first placers,
    // every op on one device, take no time).
    if (StopRequested() && !runs.empty()) break;
    PlacerOutput output;
    try {
      output = FindPlacer(name).place(problem);
    } catch (const Error&) {
      continue;
    } catch (const Stopped&) {
      break;
    }
    SimResult result = output.result ? std::move(*output.result) : problem.simulator.Run(output.placement);
    runs.push_back({name, std::move(output.placement), std::move(result)});
  }
  return runs;
}

std::vector<int32_t> DevicesOfKind(const Cluster& cluster, DeviceKind kind) {
  std::vector<int32_t> devices;
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    if (cluster.devices[d].kind == kind) devices.push_back(d);
  }
  return devices;
}

double FastestOpTimeUs(const PlacementProblem& problem, int32_t op) {
  // The simulator already holds every op's time on every device; asking the
  // cost model again would redo its roofline sums per call.
  double best = std::numeric_limits<double>::infinity();
  for (int32_t d = 0; d < problem.cluster.num_devices(); ++d) {
    best = std::min(best, problem.simulator.OpTimeUs(op, d));
  }
  return best;
}

}  // namespace devplace
