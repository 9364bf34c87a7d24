// The built-in models, by name: what `devplace models` lists and what every
// --graph argument accepts besides a file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace devplace {

// Named integer parameters that override a model's defaults ("layers",
// "hidden", "batch", ...). A model rejects names it does not know.
using ModelParams = std::map<std::string, int64_t>;

struct ModelInfo {
  std::string name;
  std::string description;
  std::vector<std::string> params;  // the parameter names it accepts
};

std::vector<ModelInfo> ListModels();
bool IsModelName(const std::string& name);

// Builds the model `name`, or throws Error naming an unknown model or
// parameter.
Graph MakeModel(const std::string& name, const ModelParams& params = {});

}  // namespace devplace
