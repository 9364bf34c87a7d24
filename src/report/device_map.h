// A placement of a graph exported from PyTorch (tools/export_pytorch.py) as
// the device_map Hugging Face accelerate takes: module name -> GPU index or
// "cpu". The exporter puts every op of a module (forward, backward, its
// parameters' updates) in a co-location group named after the module, so a
// placement that runs is a placement of modules; contiguous submodules on
// one device collapse into their parent's name.
#pragma once

#include <nlohmann/json.hpp>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "sim/placement.h"

namespace devplace {

// GPU devices become their index among the cluster's GPUs, CPUs "cpu". Keys
// come in the order the modules first compute (the graph's op order, which
// for an export is the order the step ran). Throws Error if the graph has no
// aten ops with module groups (it was not exported from PyTorch) or the
// placement splits a module.
nlohmann::ordered_json DeviceMapJson(const Graph& graph, const Cluster& cluster, const Placement& placement);

}  // namespace devplace
