#include "cli/inputs.h"

#include <cstdio>
#include <filesystem>

#include "graph/graph_json.h"
#include "import/onnx_import.h"
#include "models/registry.h"
#include "util/error.h"

namespace devplace {

Graph ResolveGraph(const std::string& model_or_path) {
  if (IsModelName(model_or_path)) return MakeModel(model_or_path);
  if (!std::filesystem::exists(model_or_path)) {
    std::string names;
    for (const auto& m : ListModels()) names += (names.empty() ? "" : ", ") + m.name;
    throw Error("graph '" + model_or_path + "' is neither a built-in model (" + names + ") nor a file");
  }
  if (IsOnnxPath(model_or_path)) {
    // An ONNX model stands for its training step; its dynamic dimensions
    // need `devplace import --dim` first.
    OnnxImportOptions options;
    options.training = true;
    OnnxImportResult result = ImportOnnxFile(model_or_path, options);
    const std::string warning = OnnxImportWarning(model_or_path, result);
    if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
    return std::move(result.graph);
  }
  return LoadGraphFile(model_or_path);
}

CostModel MakeCostModel(const Cluster& cluster, const std::string& op_times_path) {
  return CostModel(cluster, op_times_path.empty() ? OpTimeTable{} : OpTimeTable::Load(op_times_path));
}

}  // namespace devplace
