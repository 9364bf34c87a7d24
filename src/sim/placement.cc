#include "sim/placement.h"

#include <unordered_map>

#include "util/error.h"
#include "util/files.h"

namespace devplace {

Placement SingleDevicePlacement(const Graph& graph, const Cluster& cluster, int32_t device) {
  Placement placement(graph.num_ops(), device);
  const DeviceKindMask kind = MaskOf(cluster.devices[device].kind);
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    if (graph.op(op).device_kinds & kind) continue;
    for (int32_t d = 0; d < cluster.num_devices(); ++d) {
      if (graph.op(op).device_kinds & MaskOf(cluster.devices[d].kind)) {
        placement[op] = d;
        break;
      }
    }
  }
  return placement;
}

Placement ExpertPlacement(const Graph& graph, const Cluster& cluster) {
  if (graph.expert_stages <= 0) throw Error("graph " + graph.name + " has no expert placement (no expert_stages)");
  std::vector<int32_t> gpus, cpus;
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    (cluster.devices[d].kind == DeviceKind::kGpu ? gpus : cpus).push_back(d);
  }
  const int32_t host = cpus.empty() ? gpus.front() : cpus.front();
  Placement placement(graph.num_ops(), host);
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    const Op& o = graph.op(op);
    int32_t d = host;
    if (o.expert_stage != kExpertHost && !gpus.empty()) {
      d = gpus[static_cast<size_t>(o.expert_stage) * gpus.size() / graph.expert_stages];
    }
    if (!(o.device_kinds & MaskOf(cluster.devices[d].kind))) {
      for (int32_t other = 0; other < cluster.num_devices(); ++other) {
        if (o.device_kinds & MaskOf(cluster.devices[other].kind)) {
          d = other;
          break;
        }
      }
    }
    placement[op] = d;
  }
  return placement;
}

Placement ExpandGroupPlacement(const Grouping& grouping, const std::vector<int32_t>& device_of_group) {
  Placement placement(grouping.group_of_op.size());
  for (size_t op = 0; op < placement.size(); ++op) placement[op] = device_of_group[grouping.group_of_op[op]];
  return placement;
}

std::optional<std::string> CheckPlacement(const Graph& graph, const Cluster& cluster, const Placement& placement) {
  if (static_cast<int32_t>(placement.size()) != graph.num_ops()) {
    return "the placement has " + std::to_string(placement.size()) + " entries for " +
           std::to_string(graph.num_ops()) + " ops";
  }
  std::unordered_map<std::string, int32_t> device_of_group;
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    const Op& o = graph.op(op);
    int32_t d = placement[op];
    if (d < 0 || d >= cluster.num_devices()) return "op '" + o.name + "' is on no device of the cluster";
    if (!(o.device_kinds & MaskOf(cluster.devices[d].kind))) {
      return "op '" + o.name + "' (" + o.type + ") cannot run on " + cluster.devices[d].name;
    }
    if (!o.colocation_group.empty()) {
      auto [it, inserted] = device_of_group.emplace(o.colocation_group, d);
      if (!inserted && it->second != d) {
        return "co-location group '" + o.colocation_group + "' is split across " + cluster.devices[it->second].name +
               " and " + cluster.devices[d].name;
      }
    }
  }
  return std::nullopt;
}

Placement ResolvePlacement(const std::string& spec, const Graph& graph, const Cluster& cluster) {
  if (spec == "expert") return ExpertPlacement(graph, cluster);
  const std::string kSingle = "single:";
  if (spec.rfind(kSingle, 0) == 0) {
    std::string device = spec.substr(kSingle.size());
    int32_t d = cluster.FindDevice(device);
    if (d < 0) throw Error("placement '" + spec + "': cluster " + cluster.name + " has no device '" + device + "'");
    return SingleDevicePlacement(graph, cluster, d);
  }
  return LoadPlacementFile(spec, graph, cluster);
}

Placement LoadPlacementFile(const std::string& path, const Graph& graph, const Cluster& cluster) {
  nlohmann::json document = ReadJsonFile(path);
  if (!document.is_object() || !document.contains("placement") || !document["placement"].is_object()) {
    throw Error(path + ": expected an object with a 'placement' object mapping op names to devices");
  }
  Placement placement(graph.num_ops(), -1);
  for (const auto& [op_name, device] : document["placement"].items()) {
    int32_t op = graph.FindOp(op_name);
    if (op < 0) throw Error(path + ": unknown op '" + op_name + "' (not in graph " + graph.name + ")");
    if (!device.is_string()) throw Error(path + ": op '" + op_name + "': device must be a string");
    int32_t d = cluster.FindDevice(device.get<std::string>());
    if (d < 0) throw Error(path + ": op '" + op_name + "': unknown device '" + device.get<std::string>() + "' (not in cluster " + cluster.name + ")");
    placement[op] = d;
  }
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    if (placement[op] < 0) throw Error(path + ": op '" + graph.op(op).name + "' has no device");
  }
  return placement;
}

nlohmann::json PlacementToJson(const Graph& graph, const Cluster& cluster, const Placement& placement) {
  nlohmann::json by_name = nlohmann::json::object();
  for (int32_t op = 0; op < graph.num_ops(); ++op) by_name[graph.op(op).name] = cluster.devices[placement[op]].name;
  return {{"format", "devplace-placement"}, {"version", 1}, {"graph", graph.name},
          {"cluster", cluster.name}, {"placement", std::move(by_name)}};
}

void SavePlacementFile(const std::string& path, const Graph& graph, const Cluster& cluster, const Placement& placement) {
  WriteFileAtomically(path, PlacementToJson(graph, cluster, placement).dump(1) + "\n");
}

}  // namespace devplace
