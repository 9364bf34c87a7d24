// Turning command-line arguments into the objects they name.
#pragma once

#include <string>

#include "graph/graph.h"

namespace devplace {

// A built-in model's name or a graph file.
Graph ResolveGraph(const std::string& model_or_path);

}  // namespace devplace
