#include "placers/partition_input.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace devplace {
namespace {

// Scales non-negative values to integers in [1, limit] keeping ratios, with
// their sum at most `total_limit`.
std::vector<int32_t> ScaleToIntegers(const std::vector<double>& values, double total_limit) {
  double total = 0;
  for (double v : values) total += v;
  double scale = total > 0 ? total_limit / total : 1.0;
  std::vector<int32_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    out[i] = static_cast<int32_t>(std::clamp(std::llround(values[i] * scale), 1ll, 1ll << 24));
  }
  return out;
}

}  // namespace

PartitionInput BuildPartitionInput(const PlacementProblem& problem) {
  PartitionInput input;
  input.units = ConstraintGroups(problem.graph);
  const int32_t n = input.units.num_groups();
  std::vector<double> compute_us(n, 0);
  for (int32_t g = 0; g < n; ++g) {
    for (int32_t op : input.units.groups[g].ops) compute_us[g] += FastestOpTimeUs(problem, op);
  }
  // Room for the partitioners' internal sums: 2^31 / 16.
  constexpr double kTotalLimit = static_cast<double>(1 << 27);
  input.vertex_weight = ScaleToIntegers(compute_us, kTotalLimit);

  // Symmetric adjacency with summed bytes both ways, no self-loops.
  std::map<std::pair<int32_t, int32_t>, double> bytes;
  for (const GroupEdge& e : input.units.edges) {
    if (e.src == e.dst) continue;
    bytes[std::minmax(e.src, e.dst)] += static_cast<double>(e.bytes);
  }
  std::vector<double> pair_bytes;
  for (const auto& [pair, b] : bytes) pair_bytes.push_back(b);
  std::vector<int32_t> pair_weight = ScaleToIntegers(pair_bytes, kTotalLimit / 2);
  std::vector<std::vector<std::pair<int32_t, int32_t>>> neighbours(n);
  size_t i = 0;
  for (const auto& [pair, b] : bytes) {
    neighbours[pair.first].emplace_back(pair.second, pair_weight[i]);
    neighbours[pair.second].emplace_back(pair.first, pair_weight[i]);
    ++i;
  }
  input.adjacency_begin.assign(n + 1, 0);
  for (int32_t v = 0; v < n; ++v) {
    for (const auto& [w, weight] : neighbours[v]) {
      input.adjacency.push_back(w);
      input.edge_weight.push_back(weight);
    }
    input.adjacency_begin[v + 1] = static_cast<int32_t>(input.adjacency.size());
  }
  return input;
}

std::vector<int32_t> DevicesFromParts(const PlacementProblem& problem, const PartitionInput& input,
                                      const std::vector<int32_t>& part, const std::vector<int32_t>& device_of_part) {
  const Cluster& cluster = problem.cluster;
  std::vector<int32_t> device_of_unit(input.num_vertices());
  for (int32_t v = 0; v < input.num_vertices(); ++v) {
    // A partitioner may leave a vertex outside every part (Scotch's fixed
    // mapping can answer -1): such a unit takes the first device that can
    // run it, as a unit on a device of the wrong kind does.
    const int32_t p = part[v];
    int32_t d = p >= 0 && p < static_cast<int32_t>(device_of_part.size()) ? device_of_part[p] : -1;
    DeviceKindMask kinds = input.units.groups[v].device_kinds;
    if (d < 0 || !(kinds & MaskOf(cluster.devices[d].kind))) {
      for (int32_t other = 0; other < cluster.num_devices(); ++other) {
        if (kinds & MaskOf(cluster.devices[other].kind)) {
          d = other;
          break;
        }
      }
    }
    device_of_unit[v] = d;
  }
  return device_of_unit;
}

}  // namespace devplace
