#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cluster/cluster_json.h"
#include "placers/placer.h"
#include "report/compare_table.h"
#include "util/error.h"

namespace devplace {
namespace {

struct CompareFlags {
  std::string graph;
  std::string cluster;
  std::vector<std::string> methods;
  std::string op_times;
  uint64_t seed = 0;
  bool json = false;
};

void RunCompare(const CompareFlags& flags) {
  // Check every method name before any slow work.
  std::vector<const PlacerInfo*> placers;
  if (flags.methods.empty()) {
    for (const PlacerInfo& p : ListPlacers()) placers.push_back(&p);
  } else {
    for (const std::string& name : flags.methods) placers.push_back(&FindPlacer(name));
  }
  Graph graph = ResolveGraph(flags.graph);
  Cluster cluster = ResolveCluster(flags.cluster);
  OpTimeTable measured = flags.op_times.empty() ? OpTimeTable{} : OpTimeTable::Load(flags.op_times);
  CostModel cost(cluster, std::move(measured));
  Simulator simulator(graph, cluster, cost);
  PlacementProblem problem{graph, cluster, cost, simulator, flags.seed};

  Comparison comparison;
  comparison.graph_name = graph.name;
  comparison.cluster_name = cluster.name;
  comparison.num_ops = graph.num_ops();
  comparison.bound = StepTimeLowerBound(graph, cluster, cost);
  for (const PlacerInfo* placer : placers) {
    if (!flags.json) std::fprintf(stderr, "placing with %s...\n", placer->name.c_str());
    MethodResult row;
    row.method = placer->name;
    auto start = std::chrono::steady_clock::now();
    PlacerOutput output = placer->place(problem);
    row.placer_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    row.note = output.note;
    row.sim = simulator.Run(output.placement);
    comparison.methods.push_back(std::move(row));
  }
  if (flags.json) {
    std::cout << ComparisonToJson(cluster, comparison).dump(2) << "\n";
  } else {
    std::fputs(FormatComparisonText(cluster, comparison).c_str(), stdout);
  }
}

}  // namespace

void AddCompareCommand(CLI::App& app) {
  auto flags = std::make_shared<CompareFlags>();
  std::string names;
  for (const PlacerInfo& p : ListPlacers()) names += (names.empty() ? "" : ", ") + p.name;
  CLI::App* cmd = app.add_subcommand(
      "compare", "Run every baseline placer on a graph and cluster, simulate each placement, and compare them");
  cmd->add_option("--graph", flags->graph, "Graph file (JSON) or built-in model name")->required();
  cmd->add_option("--cluster", flags->cluster, "Cluster preset or cluster file")->required();
  cmd->add_option("--methods", flags->methods, "Methods to run (default: all): " + names)->delimiter(',');
  cmd->add_option("--op-times", flags->op_times, "Table of measured op times that override the cost model (JSON)");
  cmd->add_option("--seed", flags->seed, "Seed for the methods that draw random numbers");
  cmd->add_flag("--json", flags->json, "Print a JSON array, one object per method");
  cmd->callback([flags] { RunCompare(*flags); });
}

}  // namespace devplace
