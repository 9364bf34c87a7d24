// Turning command-line arguments into the objects they name.
#pragma once

#include <string>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "graph/graph.h"

namespace CLI {
class App;
}

namespace devplace {

// A built-in model's name or a graph file; a graph without ops is refused.
Graph ResolveGraph(const std::string& model_or_path);

// The --op-times flags every command that simulates takes.
struct OpTimesFlags {
  std::string path;              // empty: no table
  bool allow_unmatched = false;  // an entry that matches no op warns instead of failing
};
void AddOpTimesFlags(CLI::App* command, OpTimesFlags* flags, const std::string& help);

// The cost model of `cluster`, with the measured op times of the file at
// `flags.path` overriding it (none when the path is empty). Every entry must
// apply to some op of `graph` (docs/op-times-format.md).
CostModel MakeCostModel(const Cluster& cluster, const Graph& graph, const OpTimesFlags& flags);

// A trained file (a policy, an encoder) that a new training would replace:
// refused unless --resume continues its training or --overwrite replaces
// it, as hours of training must not go to a repeated command.
void RefuseToReplaceTrainedFile(const std::string& path, bool resume, bool overwrite, const std::string& what);

}  // namespace devplace
