#include "cli/inputs.h"

#include <cstdio>
#include <filesystem>

#include <CLI/CLI.hpp>

#include "graph/graph_json.h"
#include "import/onnx_import.h"
#include "models/registry.h"
#include "util/error.h"

namespace devplace {

namespace {

Graph LoadGraph(const std::string& model_or_path) {
  if (IsModelName(model_or_path)) return MakeModel(model_or_path);
  // The error_code form: a path the system cannot even look up (too long)
  // is an input error, not an exception from the library.
  std::error_code error;
  const bool exists = std::filesystem::exists(model_or_path, error);
  if (error) throw Error("graph '" + ForMessage(model_or_path) + "': " + error.message());
  if (!exists) {
    std::string names;
    for (const auto& m : ListModels()) names += (names.empty() ? "" : ", ") + m.name;
    throw Error("graph '" + ForMessage(model_or_path) + "' is neither a built-in model (" + names + ") nor a file");
  }
  if (IsOnnxPath(model_or_path)) {
    // An ONNX model stands for its training step; its dynamic dimensions
    // need `devplace import --dim` first.
    OnnxImportOptions options;
    options.training = true;
    options.takes_dim_flags = false;
    OnnxImportResult result = ImportOnnxFile(model_or_path, options);
    const std::string warning = OnnxImportWarning(model_or_path, result);
    if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
    return std::move(result.graph);
  }
  return LoadGraphFile(model_or_path);
}

}  // namespace

Graph ResolveGraph(const std::string& model_or_path) {
  Graph graph = LoadGraph(model_or_path);
  // A valid file, but no training step: every command would answer about
  // nothing (a step of 0 s), and the learned ones fail deep inside.
  if (graph.num_ops() == 0) throw Error("graph '" + ForMessage(model_or_path) + "' has no ops: there is no step to place, simulate or describe");
  return graph;
}

void AddOpTimesFlags(CLI::App* command, OpTimesFlags* flags, const std::string& help) {
  command->add_option("--op-times", flags->path, help);
  command->add_flag("--allow-unmatched-op-times", flags->allow_unmatched,
                    "Warn about --op-times entries that match no op of the graph instead of failing");
}

CostModel MakeCostModel(const Cluster& cluster, const Graph& graph, const OpTimesFlags& flags) {
  if (flags.path.empty()) return CostModel(cluster);
  OpTimeTable table = OpTimeTable::Load(flags.path);
  for (const std::string& warning :
       {CheckOpTimesApply(table, graph, flags.allow_unmatched), CheckOpTimesDevices(table, cluster, flags.allow_unmatched)}) {
    if (!warning.empty()) std::fprintf(stderr, "devplace: warning: %s\n", warning.c_str());
  }
  return CostModel(cluster, std::move(table));
}

void RefuseToReplaceTrainedFile(const std::string& path, bool resume, bool overwrite, const std::string& what) {
  if (resume && overwrite) throw Error("--resume and --overwrite: continue the training, or replace its file, not both");
  std::error_code error;
  if (resume || overwrite || !std::filesystem::is_regular_file(path, error)) return;
  throw Error(ForMessage(path) + ": holds a trained " + what + "; --resume continues its training, --overwrite replaces it, or choose another -o");
}

}  // namespace devplace
