#include "placers/placer.h"

#include <algorithm>
#include <limits>

#include "placers/methods.h"
#include "util/error.h"

namespace devplace {

const std::vector<PlacerInfo>& ListPlacers() {
  static const std::vector<PlacerInfo> placers = {
      {"single_cpu", "every op on the CPU", PlaceSingleCpu},
      {"single_gpu", "every op on gpu:0; ops with no GPU kernel on the CPU", PlaceSingleGpu},
      {"expert", "the human expert's layer-wise placement that comes with the model", PlaceExpert},
      {"scotch", "Scotch static mapping onto all devices (compute and bytes as weights)", PlaceScotch},
      {"mincut", "Scotch static mapping onto the GPUs only", PlaceMinCut},
      {"metis", "METIS k-way partition, part weights by device speed", PlaceMetis},
      {"m_topo", "Baechi m-TOPO: topological order, filling each device to its share", PlaceMTopo},
      {"m_etf", "Baechi m-ETF: earliest task first list scheduling under memory limits", PlaceMEtf},
      {"m_sct", "Baechi m-SCT: ETF keeping each op's favourite child on its device", PlaceMSct},
      {"random", "each co-location group on a random device (seeded)", PlaceRandom},
  };
  return placers;
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

std::vector<int32_t> DevicesOfKind(const Cluster& cluster, DeviceKind kind) {
  std::vector<int32_t> devices;
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    if (cluster.devices[d].kind == kind) devices.push_back(d);
  }
  return devices;
}

double FastestOpTimeUs(const PlacementProblem& problem, int32_t op) {
  double best = std::numeric_limits<double>::infinity();
  for (int32_t d = 0; d < problem.cluster.num_devices(); ++d) {
    best = std::min(best, problem.cost.OpTimeUs(problem.graph.op(op), d));
  }
  return best;
}

}  // namespace devplace
