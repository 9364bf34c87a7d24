// What the graph networks of GDP and Mars read of a graph on a cluster, per
// co-location unit (learned/features/op_features.h): an op type from a vocabulary shared
// by every graph a network reads, numeric features, the unit edges and the
// devices each unit may use.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "learned/features/op_features.h"

namespace devplace {

// The most common op types of `graphs` by op count (ties by name), at most
// OpFeatures::kMaxTypes - 1 of them, then "other".
std::vector<std::string> UnitVocabulary(const std::vector<const Graph*>& graphs);

// Per unit, besides its type: shape features, locality position, log FLOPs,
// log output bytes, log persistent bytes, and a bit per device kind it may
// run on. Mars's encoder reads the same.
inline constexpr int64_t kUnitNumericFeatures = OpFeatures::kShapeFeatures + 4 + kNumDeviceKinds;
// Width of the op-type embedding.
inline constexpr int64_t kUnitTypeEmbedding = 16;

// What the network reads of one graph on one cluster.
struct UnitInputs {
  torch::Tensor type;      // [U] int64: index into the vocabulary
  torch::Tensor numeric;   // [U, kUnitNumericFeatures]
  torch::Tensor src, dst;  // [E] int64: unit edges
  torch::Tensor allowed;   // [U, D] bool: the devices that can run the unit
  // For a device-scoring head (learned/networks/device_head.h), else
  // undefined: [D, features] and [D, D, kDevicePairFeatures].
  torch::Tensor device_features, device_pairs;
};
// `device_features`: the device features a device-scoring head reads
// (learned/features/device_features.h); none without one. Throws Error
// naming a feature this build does not compute.
UnitInputs BuildUnitInputs(const OpFeatures& features, const Graph& graph, const Cluster& cluster,
                         const std::vector<std::string>& vocabulary, const std::vector<std::string>& device_features = {});

}  // namespace devplace
