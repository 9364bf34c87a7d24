// What a device-scoring network (learned/networks/device_head.h) reads of a
// cluster: per device a row of named features, and per ordered pair of
// devices the route between them. Every feature is computed from the device
// and its relation to the rest of the cluster (means, minima, shares of the
// total), never from its position or name, so reordering or renaming the
// devices reorders the rows and nothing else. Speeds are relative to the
// cluster's fastest and memory to the graph's need, so a policy trained on
// one scale reads another. No torch here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "graph/graph.h"

namespace devplace {

// Per ordered pair (d, e): log bottleneck bandwidth and log latency of the
// route d -> e, and 1 on the diagonal (d itself).
inline constexpr int64_t kDevicePairFeatures = 3;

struct DeviceFeatures {
  int64_t num_devices = 0;
  std::vector<std::string> names;  // the feature of each column
  std::vector<float> values;       // [num_devices * names.size()]
  std::vector<float> pairs;        // [num_devices * num_devices * kDevicePairFeatures]
};

// Every device feature this build computes, in its order: what a fresh
// network reads and a policy file lists.
const std::vector<std::string>& KnownDeviceFeatures();

// The features `names` (in that order) of `cluster`'s devices for placing
// `graph`. Throws Error naming the first feature this build does not
// compute (a policy file from another version).
DeviceFeatures BuildDeviceFeatures(const Cluster& cluster, const Graph& graph, const std::vector<std::string>& names);

// What the graph's step may hold at once, at most: every op's persistent
// bytes and outputs. The memory features are capacities over it.
double GraphMemoryNeedBytes(const Graph& graph);

}  // namespace devplace
