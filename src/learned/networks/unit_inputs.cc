#include "learned/networks/unit_inputs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "learned/features/device_features.h"

namespace devplace {

std::vector<std::string> UnitVocabulary(const std::vector<const Graph*>& graphs) {
  std::map<std::string, int64_t> count;
  for (const Graph* graph : graphs) {
    for (const Op& op : graph->ops()) ++count[op.type];
  }
  std::vector<std::pair<std::string, int64_t>> types(count.begin(), count.end());
  std::stable_sort(types.begin(), types.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> vocabulary;
  for (const auto& [name, n] : types) {
    if (static_cast<int>(vocabulary.size()) == OpFeatures::kMaxTypes - 1) break;
    if (name != "other") vocabulary.push_back(name);
  }
  vocabulary.push_back("other");
  return vocabulary;
}

UnitInputs BuildUnitInputs(const OpFeatures& f, const Graph& graph, const Cluster& cluster,
                         const std::vector<std::string>& vocabulary, const std::vector<std::string>& device_features) {
  const int64_t U = f.num_units, D = cluster.num_devices();
  std::unordered_map<std::string, int64_t> index;
  for (size_t t = 0; t < vocabulary.size(); ++t) index.emplace(vocabulary[t], static_cast<int64_t>(t));
  const int64_t other = static_cast<int64_t>(vocabulary.size()) - 1;
  std::vector<int64_t> type(U);
  std::vector<float> numeric(U * kUnitNumericFeatures, 0.0f);
  std::vector<int64_t> allowed(U * D, 0);
  for (int64_t u = 0; u < U; ++u) {
    auto it = index.find(f.type_names[f.unit_type[u]]);
    type[u] = it == index.end() ? other : it->second;
    float* row = &numeric[u * kUnitNumericFeatures];
    std::copy_n(&f.shape_features[u * OpFeatures::kShapeFeatures], OpFeatures::kShapeFeatures, row);
    double flops = 0, persistent = 0;
    for (int32_t i = f.unit_op_offsets[u]; i < f.unit_op_offsets[u + 1]; ++i) {
      flops += graph.op(f.unit_ops[i]).flops;
      persistent += static_cast<double>(graph.op(f.unit_ops[i]).persistent_bytes);
    }
    float* extra = row + OpFeatures::kShapeFeatures;
    extra[0] = f.unit_position[u];
    // log1p / 30: a teraflop or a terabyte is about 1.
    extra[1] = static_cast<float>(std::log1p(flops) / 30);
    extra[2] = static_cast<float>(std::log1p(static_cast<double>(f.unit_output_bytes[u])) / 30);
    extra[3] = static_cast<float>(std::log1p(persistent) / 30);
    for (int k = 0; k < kNumDeviceKinds; ++k) extra[4 + k] = (f.unit_kinds[u] >> k) & 1 ? 1.0f : 0.0f;
    for (int64_t d = 0; d < D; ++d) allowed[u * D + d] = (f.unit_kinds[u] & MaskOf(cluster.devices[d].kind)) != 0;
  }
  UnitInputs in;
  in.type = torch::tensor(type, torch::kInt64);
  in.numeric = torch::tensor(numeric, torch::kFloat32).view({U, kUnitNumericFeatures});
  in.allowed = torch::tensor(allowed, torch::kInt64).view({U, D}).to(torch::kBool);
  in.src = torch::tensor(std::vector<int64_t>(f.edge_src.begin(), f.edge_src.end()), torch::kInt64);
  in.dst = torch::tensor(std::vector<int64_t>(f.edge_dst.begin(), f.edge_dst.end()), torch::kInt64);
  if (!device_features.empty()) {
    const DeviceFeatures devices = BuildDeviceFeatures(cluster, graph, device_features);
    in.device_features = torch::tensor(devices.values, torch::kFloat32).view({D, static_cast<int64_t>(device_features.size())});
    in.device_pairs = torch::tensor(devices.pairs, torch::kFloat32).view({D, D, kDevicePairFeatures});
  }
  return in;
}

}  // namespace devplace
