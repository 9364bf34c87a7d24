// Reading and writing clusters in devplace's JSON format
// (docs/cluster-format.md), and resolving a --cluster argument.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "cluster/cluster.h"

namespace devplace {

inline constexpr int kClusterFormatVersion = 1;

Cluster ClusterFromJson(const nlohmann::json& document, const std::string& source);
Cluster LoadClusterFile(const std::string& path);
nlohmann::json ClusterToJson(const Cluster& cluster);

// A preset name ("k80x4") or a path to a cluster JSON file.
Cluster ResolveCluster(const std::string& preset_or_path);

}  // namespace devplace
