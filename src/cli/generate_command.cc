// devplace generate: writes a built-in model's training step as a graph
// file, with any of its parameters overridden.
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "cli/commands.h"
#include "graph/graph_json.h"
#include "graph/grouping.h"
#include "models/registry.h"
#include "util/error.h"
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

}  // namespace

void AddGenerateCommand(CLI::App& app) {
  auto flags = std::make_shared<GenerateFlags>();
  auto options = std::make_shared<std::map<std::string, CLI::Option*>>();
  CLI::App* cmd = app.add_subcommand("generate", "Write a built-in model's training step as a graph file");
  cmd->add_option("model", flags->model, "Built-in model (devplace models lists them and the parameters each takes)")
      ->required();
  cmd->add_option("-o,--output", flags->output, "Graph file to write (JSON)")->required();
  std::set<std::string> names;
  for (const ModelInfo& model : ListModels()) {
    for (const ModelParam& param : model.params) names.insert(param.name);
  }
  for (const std::string& name : names) {
    flags->values[name] = 0;
    (*options)[name] = cmd->add_option("--" + name, flags->values[name],
                                       "Override the model's " + name + " (devplace models lists each model's range)");
  }
  cmd->callback([flags, options] { RunGenerate(*flags, *options); });
}

}  // namespace devplace
