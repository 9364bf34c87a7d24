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

// A parameter a model accepts and the values it may take. The bounds keep
// the largest graph of every model to about a million ops (it must still fit
// in memory and build in seconds) and every size far from int64 overflow;
// docs/models.md lists them.
struct ModelParam {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
};

struct ModelInfo {
  std::string name;
  std::string description;
  std::vector<ModelParam> params;  // the parameters it accepts
};

std::vector<ModelInfo> ListModels();
bool IsModelName(const std::string& name);

// Builds the model `name`, or throws Error naming an unknown model, an
// unknown parameter, or a value outside its parameter's range (checked
// before anything is built).
Graph MakeModel(const std::string& name, const ModelParams& params = {});

}  // namespace devplace
