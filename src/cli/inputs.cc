#include "cli/inputs.h"

#include <filesystem>

#include "graph/graph_json.h"
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
  return LoadGraphFile(model_or_path);
}

}  // namespace devplace
