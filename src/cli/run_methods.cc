#include "cli/run_methods.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "sim/lower_bound.h"
#include "util/error.h"

namespace devplace {

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
  CheckClusterCanRun(problem.graph, problem.cluster);
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
