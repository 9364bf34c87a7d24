// Scotch static mapping (2017 §4.2): the op graph, as co-location units with
// compute-time vertex weights and byte edge weights, mapped onto a target
// architecture built from the cluster, whose vertex weights are device speeds
// and whose edge weights are link costs.
#include <cstdint>
#include <cstdio>
#include <scotch.h>

#include <algorithm>
#include <cmath>

#include "placers/memory_repair.h"
#include "placers/methods.h"
#include "placers/partition_input.h"
#include "util/error.h"

namespace devplace {
namespace {

void Check(int status, const char* what) {
  if (status != 0) throw Error(std::string("scotch: ") + what + " failed");
}

// Owns the Scotch objects of one mapping and frees them on every path.
struct ScotchState {
  // Scotch 7 maps with threads, and unless its context says otherwise the
  // threads' interleaving changes the result from run to run (seen on
  // nmt: MinCut gave 0.664 s or 0.677 s for the same seed). A context with
  // the deterministic option and its own seeded generator fixes both.
  SCOTCH_Context context;
  SCOTCH_Graph source;
  SCOTCH_Graph bound_source;  // `source` as seen through `context`
  SCOTCH_Graph target;
  SCOTCH_Arch arch;
  // A strategy takes the kind of its first use, so building the target
  // architecture and mapping onto it need one each.
  SCOTCH_Strat arch_strategy;
  SCOTCH_Strat map_strategy;
  explicit ScotchState(uint64_t seed) {
    SCOTCH_contextInit(&context);
    SCOTCH_graphInit(&source);
    SCOTCH_graphInit(&bound_source);
    SCOTCH_graphInit(&target);
    SCOTCH_archInit(&arch);
    SCOTCH_stratInit(&arch_strategy);
    SCOTCH_stratInit(&map_strategy);
    Check(SCOTCH_contextOptionSetNum(&context, SCOTCH_OPTIONNUMDETERMINISTIC, 1), "making the context deterministic");
    Check(SCOTCH_contextRandomClone(&context), "giving the context its own random generator");
    const auto scotch_seed = static_cast<SCOTCH_Num>(seed & 0x7fffffff);
    SCOTCH_contextRandomSeed(&context, scotch_seed);
    SCOTCH_contextRandomReset(&context);
    // Building the target architecture draws from the global generator.
    SCOTCH_randomSeed(scotch_seed);
    SCOTCH_randomReset();
  }
  ~ScotchState() {
    SCOTCH_stratExit(&map_strategy);
    SCOTCH_stratExit(&arch_strategy);
    SCOTCH_archExit(&arch);
    SCOTCH_graphExit(&target);
    SCOTCH_graphExit(&bound_source);
    SCOTCH_graphExit(&source);
    SCOTCH_contextExit(&context);
  }
};

PlacerOutput ScotchMap(const PlacementProblem& problem, bool include_cpu) {
  const Cluster& cluster = problem.cluster;
  std::vector<int32_t> targets;
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    if (include_cpu || cluster.devices[d].kind != DeviceKind::kCpu) targets.push_back(d);
  }
  if (targets.empty()) targets = DevicesOfKind(cluster, DeviceKind::kCpu);
  PartitionInput input = BuildPartitionInput(problem);
  const int32_t n = input.num_vertices();
  const int32_t k = static_cast<int32_t>(targets.size());

  std::vector<int32_t> part(n, 0);
  if (k > 1 && n > 0) {
    ScotchState s(problem.seed);
    Check(SCOTCH_graphBuild(&s.source, 0, n, input.adjacency_begin.data(), nullptr, input.vertex_weight.data(), nullptr,
                            static_cast<SCOTCH_Num>(input.adjacency.size()), input.adjacency.data(),
                            input.edge_weight.data()),
          "building the op graph");
    Check(SCOTCH_graphCheck(&s.source), "checking the op graph");
    Check(SCOTCH_contextBindGraph(&s.context, &s.source, &s.bound_source), "binding the op graph to its context");

    // Target: a complete graph of the devices. A vertex weighs the device's
    // speed; an edge costs the sum over its route's hops of (fastest link
    // bandwidth / hop bandwidth), so staged and slow routes cost more.
    double min_peak = cluster.devices[targets[0]].peak_flops_per_s;
    double max_bandwidth = 0;
    for (int32_t d : targets) min_peak = std::min(min_peak, cluster.devices[d].peak_flops_per_s);
    for (const Link& link : cluster.links) max_bandwidth = std::max(max_bandwidth, link.bandwidth_bytes_per_s);
    std::vector<SCOTCH_Num> target_weight, target_begin{0}, target_adjacency, target_cost;
    for (int32_t i = 0; i < k; ++i) {
      double speed = cluster.devices[targets[i]].peak_flops_per_s / min_peak;
      target_weight.push_back(static_cast<SCOTCH_Num>(std::clamp(std::llround(speed * 10), 1ll, 1000000ll)));
      for (int32_t j = 0; j < k; ++j) {
        if (i == j) continue;
        double cost = 0;
        for (const Hop& hop : cluster.Route(targets[i], targets[j])) {
          cost += max_bandwidth / cluster.links[hop.link].bandwidth_bytes_per_s;
        }
        target_adjacency.push_back(j);
        target_cost.push_back(static_cast<SCOTCH_Num>(std::clamp(std::llround(cost * 10), 1ll, 1000000ll)));
      }
      target_begin.push_back(static_cast<SCOTCH_Num>(target_adjacency.size()));
    }
    Check(SCOTCH_graphBuild(&s.target, 0, k, target_begin.data(), nullptr, target_weight.data(), nullptr,
                            static_cast<SCOTCH_Num>(target_adjacency.size()), target_adjacency.data(),
                            target_cost.data()),
          "building the target graph");
    std::vector<SCOTCH_Num> all_targets(k);
    for (int32_t i = 0; i < k; ++i) all_targets[i] = i;
    Check(SCOTCH_archBuild0(&s.arch, &s.target, k, all_targets.data(), &s.arch_strategy), "building the architecture");

    // Units only the CPU can run are fixed to it; the rest are free (-1).
    std::vector<SCOTCH_Num> fixed(n, -1);
    auto cpu_position = std::find_if(targets.begin(), targets.end(),
                                     [&](int32_t d) { return cluster.devices[d].kind == DeviceKind::kCpu; });
    if (cpu_position != targets.end()) {
      for (int32_t v = 0; v < n; ++v) {
        if (input.units.groups[v].device_kinds == MaskOf(DeviceKind::kCpu)) fixed[v] = cpu_position - targets.begin();
      }
    }
    Check(SCOTCH_graphMapFixed(&s.bound_source, &s.arch, &s.map_strategy, fixed.data()), "mapping");
    for (int32_t v = 0; v < n; ++v) part[v] = static_cast<int32_t>(fixed[v]);
  }
  std::vector<int32_t> device_of_unit = DevicesFromParts(problem, input, part, targets);
  PlacerOutput out;
  out.placement = RepairMemory(problem, input.units, std::move(device_of_unit), out.note);
  return out;
}

}  // namespace

PlacerOutput PlaceScotch(const PlacementProblem& problem) { return ScotchMap(problem, /*include_cpu=*/true); }
PlacerOutput PlaceMinCut(const PlacementProblem& problem) { return ScotchMap(problem, /*include_cpu=*/false); }

}  // namespace devplace
