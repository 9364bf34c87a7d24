#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/inputs.h"
#include "cli/baseline_runner.h"
#include "cluster/cluster_json.h"
#include "methods/method_registry.h"
#include "placers/placer.h"
#include "report/compare_table.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

struct CompareFlags {
  std::string graph;
  std::string cluster;
  std::vector<std::string> methods;
  OpTimesFlags op_times;
  uint64_t seed = 0;
  SearchBudget budget;
  bool json = false;
};

// Whether the environment asks for a run across processes (WORLD_SIZE over
// 1); the world's join checks the rest.
bool InAWorld() {
  const char* size = std::getenv("WORLD_SIZE");
  return size && std::strtol(size, nullptr, 10) > 1;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ",") + name;
  return text;
}

void RunCompare(const CompareFlags& flags, const CompareAcrossRanks& across, const std::function<void()>& hand_over) {
  // Check every method name before any slow work.
  std::vector<const PlacerInfo*> placers = PlacersByName(flags.methods);
  const bool in_a_world = InAWorld();
  // Across processes needs torch's store: devplace-learn has it.
  if (in_a_world && !across) hand_over();
  Graph graph = ResolveGraph(flags.graph);
  Cluster cluster = ResolveCluster(flags.cluster);
  CostModel cost = MakeCostModel(cluster, graph, flags.op_times);
  Simulator simulator(graph, cluster, cost);
  PlacementProblem problem{graph, cluster, cost, simulator, flags.seed, flags.budget};
  StopOnSignals();  // a Ctrl-C ends the searches early; the table still prints
  Comparison comparison;
  if (in_a_world) {
    const CompareRankFacts facts{Joined(flags.methods), flags.op_times.path,
                                 std::to_string(flags.budget.max_evaluations) + " evaluations, " +
                                     ShowNumber(flags.budget.max_seconds) + " s"};
    std::optional<Comparison> table = across(problem, placers, facts, /*progress=*/!flags.json);
    if (!table) return;  // a worker: rank 0 prints the table
    comparison = std::move(*table);
  } else {
    comparison = CompareMethods(problem, placers, /*progress=*/!flags.json);
  }
  SearchEnded();  // printing the table: the stop's watchdog lets it finish
  if (flags.json) {
    std::cout << ComparisonToJson(cluster, comparison).dump(2) << "\n";
  } else {
    std::fputs(FormatComparisonText(cluster, comparison).c_str(), stdout);
  }
}

}  // namespace

void AddCompareCommand(CLI::App& app, CompareAcrossRanks across, std::function<void()> hand_over) {
  auto flags = std::make_shared<CompareFlags>();
  const std::string names = MethodNames({MethodKind::kBaseline, MethodKind::kSearch});
  CLI::App* cmd = app.add_subcommand(
      "compare", "Run every baseline placer on a graph and cluster, simulate each placement, and compare them");
  cmd->add_option("--graph", flags->graph, "Graph file (JSON) or built-in model name")->required();
  cmd->add_option("--cluster", flags->cluster, "Cluster preset or cluster file")->required();
  cmd->add_option("--methods", flags->methods, "Methods to run (default: all): " + names)->delimiter(',');
  AddOpTimesFlags(cmd, &flags->op_times, "Table of measured op times that override the cost model (JSON)");
  cmd->add_option("--seed", flags->seed, "Seed for the methods that draw random numbers");
  cmd->add_option("--max-evaluations,--max-samples", flags->budget.max_evaluations,
                  "Search methods (mcmc, exact): simulator evaluations each may spend (default: mcmc 2,000 or 60 s; --max-samples, as place names it, is the same)")
      ->check(NotNegative());
  cmd->add_option("--max-seconds", flags->budget.max_seconds, "Search methods: seconds each may spend")
      ->check(NotNegative());
  cmd->add_flag("--json", flags->json, "Print a JSON array, one object per method");
  cmd->callback([flags, across, hand_over] { RunCompare(*flags, across, hand_over); });
}

}  // namespace devplace
