// Reading and writing graphs in devplace's JSON format (docs/graph-format.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "graph/graph.h"

namespace devplace {

inline constexpr int kGraphFormatVersion = 1;

// Builds and finalizes a graph from parsed JSON. `source` names the input in
// errors (usually the file path). Unknown fields are ignored.
Graph GraphFromJson(const nlohmann::json& document, const std::string& source);
Graph LoadGraphFile(const std::string& path);

nlohmann::json GraphToJson(const Graph& graph);
void SaveGraphFile(const Graph& graph, const std::string& path);

}  // namespace devplace
