// devplace export: a placement written in the form a framework applies it in
// (docs/placement-format.md).
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cluster/cluster_json.h"
#include "methods/method_registry.h"
#include "placers/placer.h"
#include "report/placement_formats.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

struct ExportFlags {
  std::string graph;
  std::string cluster;
  std::string placement;
  std::string method;
  std::string format;
  std::string output;
  OpTimesFlags op_times;
  uint64_t seed = 0;
};

void RunExport(const ExportFlags& flags) {
  // Everything that needs no graph is checked first.
  if (flags.placement.empty() == flags.method.empty()) throw Error("export: give exactly one of --placement and --method");
  PlacementFormat format;
  if (!flags.format.empty()) {
    auto parsed = ParsePlacementFormat(flags.format);
    if (!parsed) throw Error("--format '" + flags.format + "': unknown (known: " + PlacementFormatNames() + ")");
    format = *parsed;
  } else if (flags.output == "-") {
    throw Error("-o -: writing to standard output needs --format");
  } else {
    format = PlacementFormatForPath(flags.output);
  }
  if (!flags.method.empty()) FindMethod(flags.method, {MethodKind::kBaseline, MethodKind::kSearch});

  Graph graph = ResolveGraph(flags.graph);
  Cluster cluster = ResolveCluster(flags.cluster);
  Placement placement;
  std::string source = flags.placement;
  if (!flags.placement.empty()) {
    placement = ResolvePlacement(flags.placement, graph, cluster);
  } else {
    CostModel cost = MakeCostModel(cluster, graph, flags.op_times);
    Simulator simulator(graph, cluster, cost);
    PlacementProblem problem{graph, cluster, cost, simulator, flags.seed};
    PlacerOutput output = FindMethod(flags.method, {MethodKind::kBaseline, MethodKind::kSearch}).placer->place(problem);
    if (!output.note.empty()) std::fprintf(stderr, "note: %s\n", output.note.c_str());
    placement = std::move(output.placement);
    source = "method " + flags.method;
  }
  // A placement that cannot run is no use to a framework either.
  if (auto problem = CheckPlacement(graph, cluster, placement)) {
    throw Error("placement from " + source + " cannot run: " + *problem);
  }
  const std::string text = FormatPlacement(format, graph, cluster, placement);
  if (flags.output == "-") {
    std::cout << text;
    return;
  }
  WriteFileAtomically(flags.output, text);
  std::fprintf(stderr, "wrote %s (%s format, %d ops)\n", flags.output.c_str(), PlacementFormatName(format),
               graph.num_ops());
}

}  // namespace

void AddExportCommand(CLI::App& app) {
  auto flags = std::make_shared<ExportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a placement as devplace JSON, CSV, TensorFlow device strings or an accelerate device_map");
  cmd->add_option("--graph", flags->graph, "Graph file (JSON) or built-in model name")->required();
  cmd->add_option("--cluster", flags->cluster, "Cluster preset or cluster file")->required();
  cmd->add_option("--placement", flags->placement,
                  "Placement file (e.g. a run's best_placement.json), single:DEVICE, or expert");
  cmd->add_option("--method", flags->method, "Or: run this baseline placer (a method of `devplace compare`)");
  cmd->add_option("--format", flags->format,
                  "Output format: " + PlacementFormatNames() +
                      " (default: from the file name: .json, .csv, .tf.json, .device_map.json)");
  cmd->add_option("-o,--output", flags->output, "File to write; - for standard output (needs --format)")->required();
  AddOpTimesFlags(cmd, &flags->op_times, "With --method: measured op times that override the cost model (JSON)");
  cmd->add_option("--seed", flags->seed, "With --method: seed for methods that draw random numbers");
  cmd->callback([flags] { RunExport(*flags); });
}

}  // namespace devplace
