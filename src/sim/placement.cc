#include "sim/placement.h"

#include <unordered_map>

#include "util/error.h"
#include "util/files.h"
#include "util/json_fields.h"

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
  if (graph.expert_stages <= 0) {
    throw Error("graph " + ForMessage(graph.name) + " has no expert placement (no expert_stages)");
  }
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
    if (d < 0 || d >= cluster.num_devices()) return "op '" + ForMessage(o.name) + "' is on no device of the cluster";
    if (!(o.device_kinds & MaskOf(cluster.devices[d].kind))) {
      return "op '" + ForMessage(o.name) + "' (" + ForMessage(o.type) + ") cannot run on " +
             ForMessage(cluster.devices[d].name);
    }
    if (!o.colocation_group.empty()) {
      auto [it, inserted] = device_of_group.emplace(o.colocation_group, d);
      if (!inserted && it->second != d) {
        return "co-location group '" + ForMessage(o.colocation_group) + "' is split across " +
               ForMessage(cluster.devices[it->second].name) + " and " + ForMessage(cluster.devices[d].name);
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
    if (d < 0) {
      throw Error("placement '" + ForMessage(spec) + "': cluster " + ForMessage(cluster.name) + " has no device '" +
                  ForMessage(device) + "'");
    }
    return SingleDevicePlacement(graph, cluster, d);
  }
  return LoadPlacementFile(spec, graph, cluster);
}

Placement LoadPlacementFile(const std::string& path, const Graph& graph, const Cluster& cluster) {
  const nlohmann::json document = ReadJsonFile(path);
  const std::string where = ForMessage(path);
  JsonFields top(document, where);
  if (!document.is_object() || !top.Has("placement") || !top.Required("placement").is_object()) {
    top.Fail("expected an object with a 'placement' object mapping op names to devices");
  }
  Placement placement(graph.num_ops(), -1);
  for (const auto& [op_name, device] : top.Required("placement").items()) {
    const std::string op_where = where + ": op '" + ForMessage(op_name) + "'";
    int32_t op = graph.FindOp(op_name);
    if (op < 0) {
      throw Error(where + ": unknown op '" + ForMessage(op_name) + "' (not in graph " + ForMessage(graph.name) + ")");
    }
    if (!device.is_string()) throw Error(op_where + ": device must be a string, not " + DescribeJsonValue(device));
    const std::string& device_name = device.get_ref<const std::string&>();
    int32_t d = cluster.FindDevice(device_name);
    if (d < 0) {
      throw Error(op_where + ": unknown device '" + ForMessage(device_name) + "' (not in cluster " +
                  ForMessage(cluster.name) + ")");
    }
    placement[op] = d;
  }
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    if (placement[op] < 0) throw Error(where + ": op '" + ForMessage(graph.op(op).name) + "' has no device");
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
  std::string text;
  try {
    text = PlacementToJson(graph, cluster, placement).dump(1) + "\n";
  } catch (const nlohmann::json::exception& e) {
    // Finalize admits only UTF-8 names, so only unfinalized inputs get here.
    throw Error(ForMessage(path) + ": cannot write the placement: " + ForMessage(e.what()));
  }
  WriteFileAtomically(path, text);
}

}  // namespace devplace
