#include "report/device_map.h"

#include <map>
#include <memory>
#include <set>

#include "util/error.h"

namespace devplace {
namespace {

// A module path ("encoder.layers.0.attn") split at its dots, as a tree.
struct ModuleNode {
  std::string path;                        // "" at the root
  std::vector<std::unique_ptr<ModuleNode>> children;  // in the order they first run
  std::map<std::string, ModuleNode*> child_by_name;
  std::set<std::string> own;               // devices of the module's own ops
  std::set<std::string> below;             // devices of its ops and all its submodules' ops
  std::vector<std::pair<std::string, std::string>> own_parameters;  // parameter name -> device
  std::map<std::string, nlohmann::ordered_json> value_of;           // device key -> JSON value
};

// What accelerate calls the device: a CUDA index, or "cpu".
nlohmann::ordered_json DeviceValue(const Cluster& cluster, int32_t device) {
  if (cluster.devices[device].kind == DeviceKind::kCpu) return "cpu";
  int32_t index = 0;
  for (int32_t d = 0; d < device; ++d) index += cluster.devices[d].kind == DeviceKind::kGpu;
  return index;
}

void Emit(const ModuleNode& node, const std::map<std::string, nlohmann::ordered_json>& values,
          nlohmann::ordered_json& map) {
  if (node.below.size() == 1) {
    map[node.path] = values.at(*node.below.begin());
    return;
  }
  // Split below here: the module's own parameters by name (accelerate takes
  // parameter names as keys too), then each submodule.
  for (const auto& [parameter, device] : node.own_parameters) map[parameter] = values.at(device);
  for (const auto& child : node.children) Emit(*child, values, map);
}

}  // namespace

nlohmann::ordered_json DeviceMapJson(const Graph& graph, const Cluster& cluster, const Placement& placement) {
  bool from_pytorch = false;
  for (const Op& op : graph.ops()) from_pytorch |= op.type.rfind("aten.", 0) == 0;
  if (!from_pytorch) {
    throw Error("graph '" + graph.name +
                "' has no aten ops: a device_map needs a graph exported from PyTorch (tools/export_pytorch.py), "
                "whose co-location groups name its modules");
  }
  ModuleNode root;
  std::map<std::string, nlohmann::ordered_json> values;
  // Modules in the order their ops compute: the exporter lists ops in the
  // order the step ran them (a topological order would not do: it meets
  // every batch norm's counter update, which needs only its buffer, first).
  // Parameters, listed first, are met last, or modules would come in the
  // order they were declared.
  std::vector<int32_t> order;
  for (bool sources : {false, true}) {
    for (int32_t op = 0; op < graph.num_ops(); ++op) {
      const bool source = graph.in_data_edges(op).empty() && graph.control_predecessors(op).empty();
      if (source == sources) order.push_back(op);
    }
  }
  for (int32_t op_index : order) {
    const Op& op = graph.op(op_index);
    // A module's state: its parameters, and the buffers the exporter names
    // by their state_dict keys (Const ops named "module.buffer", where other
    // constants are named "module/_tensor_constantN"). accelerate wants a
    // device for every state_dict key, so a split module lists both.
    const bool parameter =
        op.type == "VariableV2" || (op.type == "Const" && op.name.find('/') == std::string::npos &&
                                    (op.colocation_group.empty() || op.name.rfind(op.colocation_group + ".", 0) == 0));
    // A module's ops carry its name as their group; a parameter of the root
    // module has no group and is its own key.
    std::string path = !op.colocation_group.empty() ? op.colocation_group : parameter ? op.name : "";
    if (path.empty()) continue;  // the loss, the inputs: no module, no parameters
    const nlohmann::ordered_json value = DeviceValue(cluster, placement[op_index]);
    const std::string key = value.dump();
    values.emplace(key, value);

    ModuleNode* node = &root;
    node->below.insert(key);
    size_t start = 0;
    while (start <= path.size()) {
      size_t dot = path.find('.', start);
      const std::string name = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      auto it = node->child_by_name.find(name);
      if (it == node->child_by_name.end()) {
        node->children.push_back(std::make_unique<ModuleNode>());
        node->children.back()->path = path.substr(0, dot == std::string::npos ? path.size() : dot);
        it = node->child_by_name.emplace(name, node->children.back().get()).first;
      }
      node = it->second;
      node->below.insert(key);
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    node->own.insert(key);
    if (node->own.size() > 1) {
      throw Error("module '" + path + "' is split across devices (op '" + op.name + "' on " +
                  cluster.devices[placement[op_index]].name + "); a device_map places whole modules");
    }
    if (parameter && op.name != path) node->own_parameters.emplace_back(op.name, key);
  }
  if (root.children.empty()) {
    throw Error("graph '" + graph.name + "' has no ops in module co-location groups: nothing to put in a device_map");
  }
  nlohmann::ordered_json map = nlohmann::ordered_json::object();
  Emit(root, values, map);
  return map;
}

}  // namespace devplace
