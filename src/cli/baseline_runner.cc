#include "cli/baseline_runner.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "methods/method_registry.h"
#include "sim/lower_bound.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {

std::vector<const PlacerInfo*> PlacersByName(const std::vector<std::string>& names) {
  std::vector<const PlacerInfo*> placers;
  if (names.empty()) {
    for (const MethodInfo& m : ListMethods()) {
      if (m.placer) placers.push_back(m.placer);
    }
  } else {
    for (const std::string& name : names) placers.push_back(FindMethod(name, {MethodKind::kBaseline, MethodKind::kSearch}).placer);
  }
  return placers;
}

ComparedMethod CompareOne(const PlacementProblem& problem, const PlacerInfo& placer, bool progress) {
  ComparedMethod compared;
  // After a stop the methods left do not run (a baseline takes minutes on
  // a million ops): their rows say so, and the table prints at once.
  if (StopRequested()) {
    compared.refused = RefusedMethod{placer.name, "not run: stopped early by a signal", 0};
    return compared;
  }
  if (progress) std::fprintf(stderr, "placing with %s...\n", placer.name.c_str());
  MethodResult row;
  row.method = placer.name;
  auto start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  PlacerOutput output;
  try {
    output = placer.place(problem);
  } catch (const Stopped&) {
    // Stopped in the middle of a one-shot method's work (a list
    // scheduler's scan): it has no placement.
    compared.refused = RefusedMethod{placer.name, "stopped early by a signal before it had a placement", seconds()};
    return compared;
  } catch (const Error& e) {
    // A placer that refuses (a graph beyond what it can handle) is left
    // out with its reason, as RunPlacers leaves it out; the rest still run.
    compared.refused = RefusedMethod{placer.name, e.what(), seconds()};
    if (progress) std::fprintf(stderr, "%s refused: %s\n", placer.name.c_str(), e.what());
    return compared;
  }
  row.placer_seconds = seconds();
  row.note = output.note;
  if (placer.search && StopRequested()) row.note += std::string(row.note.empty() ? "" : "; ") + "stopped early by a signal";
  if (StopRequested()) SearchEnded();  // simulating the search's best and printing the table may take a while on a big graph
  row.sim = output.result ? std::move(*output.result) : problem.simulator.Run(output.placement);
  row.placement = std::move(output.placement);
  compared.row = std::move(row);
  return compared;
}

Comparison EmptyComparison(const PlacementProblem& problem) {
  CheckClusterCanRun(problem.graph, problem.cluster);
  Comparison comparison;
  comparison.graph_name = problem.graph.name;
  comparison.cluster_name = problem.cluster.name;
  comparison.num_ops = problem.graph.num_ops();
  comparison.bound = StepTimeLowerBound(problem.graph, problem.cluster, problem.cost);
  return comparison;
}

void AddCompared(Comparison& comparison, ComparedMethod compared) {
  if (compared.row) comparison.methods.push_back(std::move(*compared.row));
  if (compared.refused) comparison.refused.push_back(std::move(*compared.refused));
}

Comparison CompareMethods(const PlacementProblem& problem, const std::vector<const PlacerInfo*>& placers, bool progress) {
  Comparison comparison = EmptyComparison(problem);
  for (const PlacerInfo* placer : placers) AddCompared(comparison, CompareOne(problem, *placer, progress));
  return comparison;
}

}  // namespace devplace
