#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/inputs.h"
#include "cluster/cluster.h"
#include "cluster/cluster_json.h"
#include "cluster/presets.h"
#include "graph/grouping.h"
#include "models/registry.h"
#include "util/error.h"
#include "util/format_bytes.h"

namespace devplace {
namespace {

// What `clusters` does without --detect: list the presets, or print one.
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

void AddInfoCommands(CLI::App& app, std::function<void(const DetectFlags&)> detect) {
  auto flags = std::make_shared<DetectFlags>();
  CLI::App* clusters = app.add_subcommand("clusters", "List the cluster presets, or print one as a cluster file");
  CLI::Option* show = clusters->add_option("--show", flags->show, "Print this preset (or cluster file) as cluster JSON, a start for your own");
  clusters->add_flag("--detect", flags->detect,
                     "Measure this machine and print it as a cluster file: CPU devices owning disjoint cores, one "
                     "device per CUDA GPU, copy links measured");
  CLI::Option* out = clusters->add_option("-o,--out", flags->out, "With --detect: write the cluster file here");
  CLI::Option* cpus = clusters
                          ->add_option("--cpu-devices", flags->cpu_devices,
                                       "With --detect: split the usable cores among this many CPU devices")
                          ->check(InRange(1, kMaxDevices));
  CLI::Option* no_gpus = clusters->add_flag("--no-gpus", flags->no_gpus, "With --detect: leave CUDA GPUs out");
  clusters->callback([flags, show, out, cpus, no_gpus, detect] {
    if (flags->detect) {
      if (show->count() > 0) throw Error("clusters: --detect and --show do not go together");
      detect(*flags);
      return;
    }
    for (CLI::Option* option : {out, cpus, no_gpus}) {
      if (option->count() > 0) throw Error("clusters: " + option->get_name() + " needs --detect");
    }
    RunClusters(flags->show);
  });

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
