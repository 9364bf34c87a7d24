// The canonical order of a graph's ops: one topological order that depends
// on the graph alone, not on the order of its file. The simulator breaks
// every tie by an op's position in it (docs/simulator.md, "Ties"), and the
// executor runs ready ops by the same rule.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace devplace {

// Ops by height (the most ops on any path from the op to the end of the
// step), highest first, then by name with runs of digits compared as
// numbers. Position -> op index. `graph` must be finalized.
std::vector<int32_t> CanonicalOrder(const Graph& graph);

}  // namespace devplace
