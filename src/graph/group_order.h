// The order in which a sequence policy reads co-location groups.
//
// Groups are numbered by their first op in the graph's topological order,
// which for an unrolled network interleaves its chains: an RNNLM's groups
// run layer 0 step 0, layer 1 step 0, layer 0 step 1, ... A placement that
// gives each layer its own device then alternates devices at every position
// of the sequence, which a policy sampling one position after another rarely
// stumbles on. Reading the groups chain by chain instead (all of layer 0,
// then all of layer 1) turns such a pipeline into a few contiguous runs.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/grouping.h"

namespace devplace {

// A topological order of the groups that follows chains: after a group, the
// consumer it sends the most bytes to comes next if it is ready, so the
// sequence only leaves a chain when the chain ends or waits on another.
// Edges from a group to one numbered before it (a backward pass co-located
// with its forward op points back up the network) are ignored, which makes
// the group graph acyclic. Returns order[position] = group index.
std::vector<int32_t> ChainFollowingOrder(const Grouping& grouping);

// The same partition with its groups renumbered: new group i is old group
// order[i]. `order` must be a permutation of the group indices.
Grouping RenumberGroups(const Grouping& grouping, const std::vector<int32_t>& order);

}  // namespace devplace
