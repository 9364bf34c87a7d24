#include "learned/features/group_features.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace devplace {

GroupFeatures BuildGroupFeatures(const Graph& graph, const Grouping& grouping, const Cluster& cluster) {
  GroupFeatures f;
  f.num_groups = grouping.num_groups();
  std::map<std::string, int32_t> type_index;
  f.type_id.resize(f.num_groups);
  f.shape_features.assign(static_cast<size_t>(f.num_groups) * GroupFeatures::kShapeFeatures, 0.0f);
  f.inputs_of.resize(f.num_groups);
  f.outputs_of.resize(f.num_groups);
  f.allowed.assign(f.num_groups, std::vector<char>(cluster.num_devices(), 0));

  for (int32_t g = 0; g < f.num_groups; ++g) {
    const Group& group = grouping.groups[g];
    // The heaviest op names the group's type; ties go to the first.
    int32_t heaviest = group.ops.front();
    for (int32_t op : group.ops) {
      if (graph.op(op).flops > graph.op(heaviest).flops) heaviest = op;
    }
    auto [it, inserted] = type_index.emplace(graph.op(heaviest).type, static_cast<int32_t>(type_index.size()));
    if (inserted) f.type_names.push_back(it->first);
    f.type_id[g] = it->second;

    // The two largest output tensors, four dimensions each, log-scaled so
    // that 64 and 65536 are both in a network's comfortable range.
    std::vector<const TensorSpec*> outputs;
    for (int32_t op : group.ops) {
      for (const TensorSpec& t : graph.op(op).outputs) outputs.push_back(&t);
    }
    std::stable_sort(outputs.begin(), outputs.end(), [](const TensorSpec* a, const TensorSpec* b) { return a->bytes > b->bytes; });
    for (size_t k = 0; k < outputs.size() && k < 2; ++k) {
      const auto& shape = outputs[k]->shape;
      for (size_t d = 0; d < shape.size() && d < 4; ++d) {
        f.shape_features[g * GroupFeatures::kShapeFeatures + k * 4 + d] = std::log1p(static_cast<float>(shape[d])) / 10.0f;
      }
    }
    for (int32_t d = 0; d < cluster.num_devices(); ++d) {
      f.allowed[g][d] = (group.device_kinds & MaskOf(cluster.devices[d].kind)) != 0;
    }
  }
  for (const GroupEdge& e : grouping.edges) {
    f.outputs_of[e.src].push_back(e.dst);
    f.inputs_of[e.dst].push_back(e.src);
  }
  return f;
}

std::vector<int32_t> GroupDevicesFromPlacement(const Grouping& grouping, const std::vector<int32_t>& placement,
                                               int32_t num_devices) {
  std::vector<int32_t> devices(grouping.num_groups(), 0);
  std::vector<int32_t> count(num_devices);
  for (int32_t g = 0; g < grouping.num_groups(); ++g) {
    std::fill(count.begin(), count.end(), 0);
    for (int32_t op : grouping.groups[g].ops) ++count[placement[op]];
    devices[g] = static_cast<int32_t>(std::max_element(count.begin(), count.end()) - count.begin());
  }
  return devices;
}

}  // namespace devplace
