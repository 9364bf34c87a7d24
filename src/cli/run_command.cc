// `devplace run`: a placement's training step executed on this machine's
// devices (src/exec), reported as `simulate` reports a simulated one.
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/inputs.h"
#include "cli/learned_commands.h"
#include "cluster/cluster_json.h"
#include "exec/executor.h"
#include "report/chrome_trace.h"
#include "report/sim_report.h"
#include "util/error.h"

namespace devplace {
namespace {

struct RunFlags {
  std::string graph;
  std::string cluster;
  std::string placement;
  std::string trace;
  bool json = false;
  int32_t steps = 5;
  uint64_t seed = 0;
};

nlohmann::json StandInsJson(const ExecStep& step) {
  nlohmann::json list = nlohmann::json::array();
  for (const StandInUse& s : step.stand_ins) {
    list.push_back({{"type", s.type}, {"ops", s.ops}, {"busy_s", s.busy_us * 1e-6}, {"why", s.why}});
  }
  return list;
}

std::string StandInsText(const ExecStep& step) {
  if (step.stand_ins.empty()) return "stand-ins: none (every op ran its real kernel)\n";
  char line[512];
  std::snprintf(line, sizeof line, "stand-ins: %.1f%% of kernel time (%.6f s of %.6f s)\n", 100 * step.stand_in_share(),
                (step.stand_in_share() * step.busy_us) * 1e-6, step.busy_us * 1e-6);
  std::string out = line;
  for (const StandInUse& s : step.stand_ins) {
    std::snprintf(line, sizeof line, "  %-36s %5d ops %12.6f s  %s\n", ForMessage(s.type, 36).c_str(), s.ops,
                  s.busy_us * 1e-6, ForMessage(s.why, 200).c_str());
    out += line;
  }
  return out;
}

void RunRun(const RunFlags& flags) {
  Graph graph = ResolveGraph(flags.graph);
  Cluster cluster = ResolveCluster(flags.cluster);
  CheckClusterIsThisMachine(cluster, "cluster '" + flags.cluster + "'");
  Placement placement = ResolvePlacement(flags.placement, graph, cluster);
  // simulate reports a placement that cannot run; run cannot run it at all.
  if (auto problem = CheckPlacement(graph, cluster, placement)) {
    throw Error("placement '" + ForMessage(flags.placement) + "' cannot run on cluster '" + ForMessage(flags.cluster) +
                "': " + *problem);
  }

  ExecOptions options;
  options.seed = flags.seed;
  options.record_events = !flags.trace.empty();
  Executor executor(graph, cluster, options);
  ExecMeasurement measured = MeasureRealStepTime(executor, placement, flags.steps);
  const ExecStep& step = measured.last;

  if (!flags.trace.empty()) WriteChromeTrace(flags.trace, graph, cluster, step.result);
  const Measurement* protocol = flags.steps > 1 ? &measured.protocol : nullptr;
  if (flags.json) {
    nlohmann::json out = SimulateToJson(cluster, step.result, protocol, flags.steps);
    out["graph"] = graph.name;
    out["cluster"] = cluster.name;
    out["measured"] = true;
    out["busy_s"] = step.busy_us * 1e-6;
    out["stand_in_share"] = step.stand_in_share();
    out["stand_ins"] = StandInsJson(step);
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::printf("graph %s (%d ops) on cluster %s, run on this machine\n", ForMessage(graph.name).c_str(),
                graph.num_ops(), ForMessage(cluster.name).c_str());
    std::fputs(FormatSimulateText(cluster, step.result, protocol, flags.steps).c_str(), stdout);
    std::fputs(StandInsText(step).c_str(), stdout);
    if (!flags.trace.empty()) std::printf("trace written to %s\n", flags.trace.c_str());
  }
}

}  // namespace

void AddRunCommand(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", LearnedCommandDescription("run"));
  cmd->add_option("--graph", flags->graph, "Graph file (JSON) or built-in model name")->required();
  cmd->add_option("--cluster", flags->cluster, "This machine as a cluster file (devplace clusters --detect)")
      ->required();
  cmd->add_option("--placement", flags->placement, "Placement file; single:DEVICE to put every op on DEVICE; or expert")
      ->required();
  cmd->add_option("--steps", flags->steps,
                  "Run N steps; with N > 1 the first is dropped and the step time is the mean of the rest")
      ->check(InRange(1, 1000));
  cmd->add_option("--seed", flags->seed, "Seed of the values of the step's inputs and variables");
  cmd->add_option("--trace", flags->trace, "Also write the last step as Chrome trace JSON (open in Perfetto)");
  cmd->add_flag("--json", flags->json, "Print one JSON object instead of the table");
  cmd->callback([flags] { RunRun(*flags); });
}

}  // namespace devplace
