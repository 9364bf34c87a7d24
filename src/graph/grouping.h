// Co-location grouping (§3.3 of the 2017 paper): ops that must or should
// share a device are merged into groups, so that placers decide for a few
// hundred groups instead of tens of thousands of ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace devplace {

struct Group {
  std::string name;             // its co-location group's name, else its last op's name
  std::vector<int32_t> ops;     // member op indices, in topological order
  double flops = 0;
  int64_t persistent_bytes = 0;
  int64_t output_bytes = 0;     // sum of the members' output tensors
  DeviceKindMask device_kinds = kAllDeviceKinds;  // kinds that can run every member
};

// Bytes that flow from group `src` to group `dst`; each tensor counts once
// per destination group however many ops there consume it.
struct GroupEdge {
  int32_t src = 0;
  int32_t dst = 0;
  int64_t bytes = 0;
};

struct Grouping {
  std::vector<int32_t> group_of_op;  // op index -> group index
  std::vector<Group> groups;         // ordered by their first op in topological order
  std::vector<GroupEdge> edges;      // one per connected (src, dst) pair, sorted

  int32_t num_groups() const { return static_cast<int32_t>(groups.size()); }
};

struct GroupingOptions {
  // Merge a group into its only consumer group, recursively, until nothing
  // merges. A group is merged only where that does not narrow the device
  // kinds its consumer may use (an input pipeline stuck on the CPU does not
  // drag its consumer there).
  bool merge_single_consumer = true;
};

// Groups a finalized graph: first the given co-location constraints, then
// the single-consumer rule.
Grouping BuildGrouping(const Graph& graph, const GroupingOptions& options = {});

// Every op in its own group: the identity grouping, for placers that work on
// ops directly.
Grouping IdentityGrouping(const Graph& graph);

}  // namespace devplace
