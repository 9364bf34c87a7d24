#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cluster/cluster_json.h"
#include "cluster/presets.h"
#include "graph/grouping.h"
#include "models/registry.h"
#include "util/error.h"
#include "util/format_bytes.h"

namespace devplace {

void RunClusters(const std::string& show) {
  if (!show.empty()) {
    std::cout << ClusterToJson(ResolveCluster(show)).dump(2) << "\n";
    return;
  }
  for (const auto& preset : ListClusterPresets()) {
    Cluster c = *MakeClusterPreset(preset.name);
    std::printf("%-8s %2d devices  %s\n", preset.name.c_str(), c.num_devices(), preset.description.c_str());
  }
}

namespace {

void RunModels() {
  for (const auto& model : ListModels()) {
    std::string params;
    for (const ModelParam& p : model.params) {
      params += (params.empty() ? "--" : " --") + p.name + " " + std::to_string(p.min) + ".." + std::to_string(p.max);
    }
    std::printf("%-16s %s  [%s]\n", model.name.c_str(), model.description.c_str(), params.c_str());
  }
}

void RunInfo(const std::string& graph_spec, bool json) {
  Graph graph = ResolveGraph(graph_spec);
  Grouping groups = BuildGrouping(graph);
  int64_t parameters = 0, output_bytes = 0;
  int32_t by_phase[kNumPhases] = {0, 0, 0, 0};
  // Checked: a graph file may hold sizes whose sum passes int64.
  auto add = [&](int64_t& total, int64_t bytes) {
    if (__builtin_add_overflow(total, bytes, &total)) {
      throw Error("graph '" + ForMessage(graph_spec) + "': its sizes sum past 2^63 bytes");
    }
  };
  for (const Op& op : graph.ops()) {
    add(parameters, op.persistent_bytes);
    for (const TensorSpec& t : op.outputs) add(output_bytes, t.bytes);
    ++by_phase[static_cast<int>(op.phase)];
  }
  if (json) {
    nlohmann::json out = {{"name", graph.name},
                          {"ops", graph.num_ops()},
                          {"data_edges", graph.data_edges().size()},
                          {"control_edges", graph.control_edges().size()},
                          {"groups", groups.num_groups()},
                          {"flops", graph.total_flops()},
                          {"persistent_bytes", parameters},
                          {"output_bytes", output_bytes}};
    for (int p = 0; p < kNumPhases; ++p) out["ops_" + std::string(PhaseName(static_cast<Phase>(p)))] = by_phase[p];
    // Replace rather than throw on a name that is not UTF-8.
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  std::printf("graph:            %s\n", ForMessage(graph.name).c_str());
  std::printf("ops:              %d (forward %d, backward %d, update %d, other %d)\n", graph.num_ops(), by_phase[0],
              by_phase[1], by_phase[2], by_phase[3]);
  std::printf("edges:            %zu data, %zu control\n", graph.data_edges().size(), graph.control_edges().size());
  std::printf("co-location groups: %d\n", groups.num_groups());
  std::printf("FLOPs per step:   %.4g\n", graph.total_flops());
  std::printf("persistent memory: %s\n", FormatBytes(parameters).c_str());
  std::printf("all outputs:      %s\n", FormatBytes(output_bytes).c_str());
}

}  // namespace

void AddInfoCommands(CLI::App& app) {
  auto show = std::make_shared<std::string>();
  CLI::App* clusters = app.add_subcommand("clusters", "List the cluster presets, or print one as a cluster file");
  clusters->add_option("--show", *show, "Print this preset (or cluster file) as cluster JSON, a start for your own");
  clusters->callback([show] { RunClusters(*show); });

  CLI::App* models = app.add_subcommand("models", "List the built-in models");
  models->callback([] { RunModels(); });

  auto graph = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* info = app.add_subcommand("info", "Summarise a graph: ops, edges, co-location groups, FLOPs, memory");
  info->add_option("--graph", *graph, "Graph file (JSON) or built-in model name")->required();
  info->add_flag("--json", *json, "Print one JSON object");
  info->callback([graph, json] { RunInfo(*graph, *json); });
}

}  // namespace devplace
