// What the learned placers see of a graph: for each co-location group, its
// op type, its output shapes and its neighbours, plus the devices it may use.
// Plain data, no torch, so it builds fast and tests without a network.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "graph/grouping.h"

namespace devplace {

struct GroupFeatures {
  static constexpr int kShapeFeatures = 8;  // two largest outputs, four dimensions each

  int32_t num_groups = 0;
  std::vector<std::string> type_names;   // the vocabulary; type_id indexes it
  std::vector<int32_t> type_id;          // per group: the type of its heaviest op
  std::vector<float> shape_features;     // [group][kShapeFeatures], log-scaled, zero-padded
  std::vector<std::vector<int32_t>> inputs_of;   // groups feeding each group
  std::vector<std::vector<int32_t>> outputs_of;  // groups each group feeds
  std::vector<std::vector<char>> allowed;        // [group][device]: can it run there

  int32_t num_types() const { return static_cast<int32_t>(type_names.size()); }
};

// Groups are taken in the grouping's order, which is topological by first op.
GroupFeatures BuildGroupFeatures(const Graph& graph, const Grouping& grouping, const Cluster& cluster);

// The device of each group in an op-level placement: the device most of its
// ops (by count) sit on. For warm starts from baseline placements.
std::vector<int32_t> GroupDevicesFromPlacement(const Grouping& grouping, const std::vector<int32_t>& placement,
                                               int32_t num_devices);

}  // namespace devplace
