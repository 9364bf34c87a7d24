// devplace generate: writes a built-in model's training step as a graph
// file, with any of its parameters overridden; `generate cluster` writes a
// random cluster from a seed (cluster/cluster_generator.h).
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cluster/cluster_generator.h"
#include "cluster/cluster_json.h"
#include "graph/graph_json.h"
#include "graph/grouping.h"
#include "models/registry.h"
#include "util/error.h"
#include "util/files.h"
#include "util/format_bytes.h"

namespace devplace {
namespace {

struct GenerateFlags {
  std::string model;
  std::string output;
  // One slot per parameter name any model takes; the model rejects the
  // ones it does not know.
  std::map<std::string, int64_t> values;
};

void RunGenerate(const GenerateFlags& flags, const std::map<std::string, CLI::Option*>& options) {
  ModelParams params;
  for (const auto& [name, option] : options) {
    if (option->count() > 0) params[name] = flags.values.at(name);
  }
  Graph graph = MakeModel(flags.model, params);
  SaveGraphFile(graph, flags.output);
  Grouping groups = BuildGrouping(graph);
  std::printf("wrote %s: %s, %d ops, %d co-location groups, %.4g FLOPs per step, %s persistent\n",
              ForMessage(flags.output).c_str(), ForMessage(graph.name).c_str(), graph.num_ops(), groups.num_groups(), graph.total_flops(),
              FormatBytes(graph.total_persistent_bytes()).c_str());
}

struct GenerateClusterFlags {
  uint64_t seed = 0;
  int32_t devices = 0;
  int32_t min_devices = 0;
  int32_t max_devices = 0;
  std::string profile = "mixed";
  bool no_cpu = false;
  std::string output;
};

void RunGenerateCluster(const GenerateClusterFlags& flags, const CLI::Option* devices, const CLI::Option* min_devices,
                        const CLI::Option* max_devices) {
  const std::optional<ClusterProfile> profile = ParseClusterProfile(flags.profile);
  if (!profile) {
    std::string names;
    for (const std::string& name : ClusterProfileNames()) names += (names.empty() ? "" : ", ") + name;
    throw Error("generate cluster: unknown --profile '" + ForMessage(flags.profile) + "' (profiles: " + names + ")");
  }
  ClusterGeneratorOptions options = ClusterGeneratorOptions::ForProfile(*profile);
  options.include_cpu = !flags.no_cpu;
  if (devices->count() > 0) {
    options.min_devices = options.max_devices = flags.devices;
  } else {
    if (min_devices->count() > 0) options.min_devices = flags.min_devices;
    if (max_devices->count() > 0) options.max_devices = flags.max_devices;
    if (options.min_devices > options.max_devices) {
      throw Error("generate cluster: --min-devices " + std::to_string(options.min_devices) + " is above --max-devices " +
                  std::to_string(options.max_devices) + (max_devices->count() > 0 ? "" : " (its default)"));
    }
  }
  const Cluster cluster = GenerateCluster(options, flags.seed);
  const std::string text = ClusterToJson(cluster).dump(2) + "\n";
  if (flags.output.empty()) {
    std::cout << text;
    return;
  }
  WriteFileAtomically(flags.output, text);
  const int32_t gpus = cluster.num_devices() - (options.include_cpu ? 1 : 0);
  std::printf("wrote %s: %s, %d devices (%s%d GPUs), %zu links, %zu shared buses\n", ForMessage(flags.output).c_str(),
              cluster.name.c_str(), cluster.num_devices(), options.include_cpu ? "1 CPU + " : "", gpus,
              cluster.links.size(), cluster.buses.size());
}

// `check_parent` refuses flags of the model form given before the word
// `cluster`, ahead of writing anything.
void AddGenerateClusterCommand(CLI::App& generate, std::function<void()> check_parent) {
  auto flags = std::make_shared<GenerateClusterFlags>();
  CLI::App* cmd = generate.add_subcommand(
      "cluster", "Write a random cluster from a seed: a host CPU and GPUs of mixed generations (docs/cluster-format.md)");
  cmd->add_option("--seed", flags->seed, "Seed: the same seed and flags give the same file")->required();
  CLI::Option* devices = cmd->add_option("--devices", flags->devices, "Exactly this many devices, the CPU included")
                             ->check(InRange(1, kMaxDevices));
  CLI::Option* min_devices =
      cmd->add_option("--min-devices", flags->min_devices, "At least this many devices, the CPU included (default 2)")
          ->check(InRange(1, kMaxDevices));
  CLI::Option* max_devices =
      cmd->add_option("--max-devices", flags->max_devices, "At most this many devices, the CPU included (default 16)")
          ->check(InRange(1, kMaxDevices));
  devices->excludes(min_devices)->excludes(max_devices);
  cmd->add_option("--profile", flags->profile, "mixed (default), hetero (speeds and memory far apart) or tight (little memory)");
  cmd->add_flag("--no-cpu", flags->no_cpu, "GPUs only (built-in models have CPU-only ops and cannot run on such a cluster)");
  cmd->add_option("-o,--output", flags->output, "Cluster file to write (JSON); without it the cluster is printed");
  cmd->callback([flags, devices, min_devices, max_devices, check_parent] {
    check_parent();
    RunGenerateCluster(*flags, devices, min_devices, max_devices);
  });
}

}  // namespace

void AddGenerateCommand(CLI::App& app) {
  auto flags = std::make_shared<GenerateFlags>();
  auto options = std::make_shared<std::map<std::string, CLI::Option*>>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Write a built-in model's training step as a graph file, or a random cluster (generate cluster)");
  // Not required to CLI11: `generate cluster` has neither; the callback
  // asks for them otherwise.
  cmd->add_option("model", flags->model, "Built-in model (devplace models lists them and the parameters each takes)");
  CLI::Option* output = cmd->add_option("-o,--output", flags->output, "Graph file to write (JSON)");
  std::set<std::string> names;
  for (const ModelInfo& model : ListModels()) {
    for (const ModelParam& param : model.params) names.insert(param.name);
  }
  for (const std::string& name : names) {
    flags->values[name] = 0;
    (*options)[name] = cmd->add_option("--" + name, flags->values[name],
                                       "Override the model's " + name + " (devplace models lists each model's range)");
  }
  AddGenerateClusterCommand(*cmd, [flags, options, output] {
    if (!flags->model.empty()) throw Error("generate: a model name and `cluster` do not go together");
    for (const auto& [name, option] : *options) {
      if (option->count() > 0) throw Error("generate cluster: --" + name + " goes after the word `cluster`");
    }
    if (output->count() > 0) throw Error("generate cluster: --output goes after the word `cluster`");
  });
  CLI::App* cluster = cmd->get_subcommand("cluster");
  cmd->callback([flags, options, output, cluster] {
    if (cluster->parsed()) return;  // its own callback did the work
    if (flags->model.empty()) throw CLI::RequiredError("model");
    if (output->count() == 0) throw CLI::RequiredError("--output");
    RunGenerate(*flags, *options);
  });
}

}  // namespace devplace
