// A placement assigns every op a device (an index into Cluster::devices).
// This module makes, checks, reads and writes placements.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "graph/grouping.h"

namespace devplace {

using Placement = std::vector<int32_t>;

// Everything on `device`, except ops its kind cannot run, which go to the
// first device that can (as TensorFlow's soft placement does).
Placement SingleDevicePlacement(const Graph& graph, const Cluster& cluster, int32_t device);

// The human expert's placement recorded in the graph (Op::expert_stage):
// stage s of S goes to GPU floor(s * G / S), host ops to the CPU, and ops a
// device cannot run to the first device that can. Throws Error if the graph
// has no expert stages.
Placement ExpertPlacement(const Graph& graph, const Cluster& cluster);

// Expands a device per group to a device per op.
Placement ExpandGroupPlacement(const Grouping& grouping, const std::vector<int32_t>& device_of_group);

// Why `placement` cannot run, or nullopt if it can: a wrong size, an op on a
// device that cannot run it, or a co-location group split across devices.
std::optional<std::string> CheckPlacement(const Graph& graph, const Cluster& cluster, const Placement& placement);

// "single:DEVICE", "expert" or a placement file (docs/placement-format.md).
Placement ResolvePlacement(const std::string& spec, const Graph& graph, const Cluster& cluster);

Placement LoadPlacementFile(const std::string& path, const Graph& graph, const Cluster& cluster);
// The placement file's JSON document; SavePlacementFile writes it.
nlohmann::json PlacementToJson(const Graph& graph, const Cluster& cluster, const Placement& placement);
void SavePlacementFile(const std::string& path, const Graph& graph, const Cluster& cluster, const Placement& placement);

}  // namespace devplace
