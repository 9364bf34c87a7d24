// Co-location grouping (§3.3 of the 2017 paper): ops that must or should
// share a device are merged into groups, so that placers decide for a few
// hundred groups instead of tens of thousands of ops.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
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

  // The size the memory bound of the single-consumer merge is checked
  // against: parameters plus every output, an over-estimate of what the
  // group adds to a device's peak (activations are not all live at once).
  int64_t memory_bytes() const;
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

inline constexpr int64_t kNoGroupBytesBound = std::numeric_limits<int64_t>::max();

struct GroupingOptions {
  // Merge a group into its only consumer group, recursively, until nothing
  // merges. A group is merged only where that does not narrow the device
  // kinds its consumer may use (an input pipeline stuck on the CPU does not
  // drag its consumer there), and only where the merged group stays within
  // the memory bound below.
  bool merge_single_consumer = true;
  // Per device kind, the most Group::memory_bytes() a merged group that can
  // run on that kind may have; a merged group must be within the bound of
  // every kind it can run on (so it fits the smallest device that could run
  // it). Without it a chain-shaped graph collapses into one group larger
  // than any GPU. The graph knows no devices: callers that place derive it
  // from their cluster (GroupingOptionsFor in placers/placer.h). Groups the
  // co-location constraints form are never split, however large.
  std::array<int64_t, kNumDeviceKinds> max_group_bytes_of_kind{kNoGroupBytesBound, kNoGroupBytesBound};

  // The bound for a group that can run on `kinds`.
  int64_t MaxGroupBytes(DeviceKindMask kinds) const;
};

// Groups a finalized graph: first the given co-location constraints, then
// the single-consumer rule.
Grouping BuildGrouping(const Graph& graph, const GroupingOptions& options = {});

// Every op in its own group: the identity grouping, for placers that work on
// ops directly.
Grouping IdentityGrouping(const Graph& graph);

}  // namespace devplace
