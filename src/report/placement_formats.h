// A placement in the forms people apply it in (docs/placement-format.md):
// devplace's own JSON, CSV, TensorFlow device strings, and a Hugging Face
// accelerate device_map for graphs exported from PyTorch.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "sim/placement.h"

namespace devplace {

enum class PlacementFormat { kDevplace, kCsv, kTensorflow, kDeviceMap };

// "devplace", "csv", "tf", "device_map".
const char* PlacementFormatName(PlacementFormat format);
std::optional<PlacementFormat> ParsePlacementFormat(std::string_view name);
// Every format's name, for help texts: "devplace, csv, tf, device_map".
std::string PlacementFormatNames();

// The format a file name implies: .device_map.json, .tf.json, .csv, then
// .json (devplace). Throws Error naming the path if none fits.
PlacementFormat PlacementFormatForPath(const std::string& path);

// "/device:GPU:1": the device's kind and its index among the cluster's
// devices of that kind, as TensorFlow numbers them.
std::string TensorflowDeviceString(const Cluster& cluster, int32_t device);

// The placement written in `format`. Throws Error where the format cannot
// say it (a device_map of a graph without modules).
std::string FormatPlacement(PlacementFormat format, const Graph& graph, const Cluster& cluster,
                            const Placement& placement);

}  // namespace devplace
