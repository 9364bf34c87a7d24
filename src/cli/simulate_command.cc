#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/inputs.h"
#include "cluster/cluster_json.h"
#include "cost/cost_model.h"
#include "report/chrome_trace.h"
#include "report/sim_report.h"
#include "sim/measure.h"
#include "sim/simulator.h"
#include "util/error.h"

namespace devplace {
namespace {

struct SimulateFlags {
  std::string graph;
  std::string cluster;
  std::string placement;
  std::string trace;
  OpTimesFlags op_times;
  bool json = false;
  double jitter = 0;
  double failure_probability = 0;
  uint64_t seed = 0;
  int32_t steps = 1;
  double first_step_factor = 1.0;
};

void RunSimulate(const SimulateFlags& flags) {
  Graph graph = ResolveGraph(flags.graph);
  Cluster cluster = ResolveCluster(flags.cluster);
  Placement placement = ResolvePlacement(flags.placement, graph, cluster);
  CostModel cost = MakeCostModel(cluster, graph, flags.op_times);
  Simulator simulator(graph, cluster, cost);

  SimOptions options;
  options.noise.jitter = flags.jitter;
  options.noise.failure_probability = flags.failure_probability;
  options.seed = flags.seed;
  options.record_events = !flags.trace.empty();
  SimResult result = simulator.Run(placement, options);

  // The paper's protocol: N steps, drop the first, average the rest.
  std::optional<Measurement> measurement;
  if (flags.steps > 1) {
    MeasureOptions m;
    m.steps = flags.steps;
    m.noise = options.noise;
    m.seed = flags.seed;
    m.first_step_factor = flags.first_step_factor;
    measurement = MeasureStepTime(simulator, placement, m);
  }

  if (!flags.trace.empty() && !result.invalid) WriteChromeTrace(flags.trace, graph, cluster, result);

  // With --steps N > 1 the protocol's mean is the step time; the detailed
  // step is reported beside it as one step.
  const Measurement* protocol = measurement ? &*measurement : nullptr;
  if (flags.json) {
    nlohmann::json out = SimulateToJson(cluster, result, protocol, flags.steps);
    out["graph"] = graph.name;
    out["cluster"] = cluster.name;
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("graph %s (%d ops) on cluster %s\n", graph.name.c_str(), graph.num_ops(), cluster.name.c_str());
    std::fputs(FormatSimulateText(cluster, result, protocol, flags.steps).c_str(), stdout);
    if (!flags.trace.empty() && !result.invalid) std::printf("trace written to %s\n", flags.trace.c_str());
  }
}

}  // namespace

void AddSimulateCommand(CLI::App& app) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one training step of a placement and report its step time");
  cmd->add_option("--graph", flags->graph, "Graph file (JSON) or built-in model name")->required();
  cmd->add_option("--cluster", flags->cluster, "Cluster preset (k80x2, k80x4, p100x2, p100x4, p100x8, h100x8) or cluster file")
      ->required();
  cmd->add_option("--placement", flags->placement,
                  "Placement file; single:DEVICE to put every op on DEVICE (ops it cannot run go to the first device "
                  "that can); or expert for the model's human-expert placement")
      ->required();
  cmd->add_option("--trace", flags->trace, "Also write the step's events as Chrome trace JSON (open in Perfetto)");
  cmd->add_flag("--json", flags->json, "Print one JSON object instead of the table");
  AddOpTimesFlags(cmd, &flags->op_times, "Table of measured op times that override the cost model (JSON)");
  cmd->add_option("--jitter", flags->jitter, "Noise: std dev of the log of each op and transfer time (0 = deterministic)")
      ->check(InRange(0.0, 10.0));
  cmd->add_option("--failure-probability", flags->failure_probability, "Noise: chance that a step fails sporadically")
      ->check(InRange(0.0, 1.0));
  cmd->add_option("--seed", flags->seed, "Seed of the noise");
  cmd->add_option("--steps", flags->steps,
                  "Measure as the 2017 paper does: run N steps, drop the first; the mean of the rest is the step time")
      ->check(InRange(1, 1000000));
  cmd->add_option("--first-step-factor", flags->first_step_factor, "How much slower the (dropped) first step runs")
      ->check(InRange(1.0, 1000.0));
  cmd->callback([flags] { RunSimulate(*flags); });
}

}  // namespace devplace
