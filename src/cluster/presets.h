// Built-in clusters: the machines of the papers, and a current one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"

namespace devplace {

struct ClusterPresetInfo {
  std::string name;
  std::string description;
};

std::vector<ClusterPresetInfo> ListClusterPresets();

// The finalized preset called `name`, or nullopt.
std::optional<Cluster> MakeClusterPreset(const std::string& name);

}  // namespace devplace
