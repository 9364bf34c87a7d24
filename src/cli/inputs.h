// Turning command-line arguments into the objects they name.
#pragma once

#include <string>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "graph/graph.h"

namespace devplace {

// A built-in model's name or a graph file.
Graph ResolveGraph(const std::string& model_or_path);

// The cost model of `cluster`, with the measured op times of the file at
// `op_times_path` overriding it (none when the path is empty).
CostModel MakeCostModel(const Cluster& cluster, const std::string& op_times_path);

}  // namespace devplace
