#include "learned/features/op_features.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <tuple>
#include <unordered_map>

#include "graph/group_order.h"
#include "graph/grouping.h"
#include "sim/simulator.h"
#include "util/error.h"

namespace devplace {
namespace {

// Units: ops that share a non-empty co-location group, else one op each,
// numbered by their first op in topological order.
void BuildUnits(const Graph& graph, const Cluster& cluster, OpFeatures& f) {
  const DeviceKindMask present = cluster.kinds_present();
  std::unordered_map<std::string, int32_t> unit_of_group;
  f.unit_of_op.assign(f.num_ops, -1);
  std::vector<int32_t> first_op;
  for (int32_t op : graph.topological_order()) {
    const std::string& group = graph.op(op).colocation_group;
    int32_t unit = static_cast<int32_t>(first_op.size());
    if (!group.empty()) {
      auto [it, inserted] = unit_of_group.emplace(group, unit);
      unit = it->second;
    }
    if (unit == static_cast<int32_t>(first_op.size())) {
      first_op.push_back(op);
      f.unit_kinds.push_back(present);
    }
    f.unit_of_op[op] = unit;
    f.unit_kinds[unit] &= graph.op(op).device_kinds;
  }
  f.num_units = static_cast<int32_t>(first_op.size());
  for (int32_t u = 0; u < f.num_units; ++u) {
    if (f.unit_kinds[u] != 0) continue;
    const Op& op = graph.op(first_op[u]);
    const std::string what = op.colocation_group.empty() ? "op '" + ForMessage(op.name) + "'"
                                                         : "co-location group '" + ForMessage(op.colocation_group) + "'";
    throw Error(what + " has no device kind in common with cluster '" + ForMessage(cluster.name) + "'");
  }
  // Counting sort of the ops by unit, keeping topological order within one.
  f.unit_op_offsets.assign(f.num_units + 1, 0);
  for (int32_t op = 0; op < f.num_ops; ++op) ++f.unit_op_offsets[f.unit_of_op[op] + 1];
  for (int32_t u = 0; u < f.num_units; ++u) f.unit_op_offsets[u + 1] += f.unit_op_offsets[u];
  f.unit_ops.resize(f.num_ops);
  std::vector<int32_t> next(f.unit_op_offsets.begin(), f.unit_op_offsets.end() - 1);
  for (int32_t op : graph.topological_order()) f.unit_ops[next[f.unit_of_op[op]]++] = op;
}

// The most common types by op count (ties by name), "other" for the rest.
void BuildTypes(const Graph& graph, OpFeatures& f) {
  std::unordered_map<std::string, int64_t> count;
  for (const Op& op : graph.ops()) ++count[op.type];
  std::vector<std::pair<std::string, int64_t>> types(count.begin(), count.end());
  std::sort(types.begin(), types.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  const bool overflow = static_cast<int>(types.size()) > OpFeatures::kMaxTypes;
  const size_t kept = overflow ? OpFeatures::kMaxTypes - 1 : types.size();
  std::unordered_map<std::string, int32_t> index;
  for (size_t t = 0; t < kept; ++t) {
    index.emplace(types[t].first, static_cast<int32_t>(t));
    f.type_names.push_back(types[t].first);
  }
  if (overflow) f.type_names.push_back("other");
  if (f.type_names.empty()) f.type_names.push_back("other");  // a graph of no ops still has a vocabulary
  const int32_t other = f.num_types() - 1;
  f.op_type.resize(f.num_ops);
  for (int32_t op = 0; op < f.num_ops; ++op) {
    auto it = index.find(graph.op(op).type);
    f.op_type[op] = it == index.end() ? other : it->second;
  }
}

float DimFeature(double dim) {
  // An unknown dimension is -1: apart from every real size (>= 0).
  return dim < 0 ? -1.0f : static_cast<float>(std::log1p(dim) / 10.0);
}

// Each unit's type, largest output shapes and total output bytes.
void BuildUnitContents(const Graph& graph, OpFeatures& f) {
  f.unit_type.resize(f.num_units);
  f.unit_output_bytes.assign(f.num_units, 0.0f);
  f.shape_features.assign(static_cast<size_t>(f.num_units) * OpFeatures::kShapeFeatures, 0.0f);
  std::vector<const TensorSpec*> outputs;
  for (int32_t u = 0; u < f.num_units; ++u) {
    int32_t heaviest = f.unit_ops[f.unit_op_offsets[u]];
    outputs.clear();
    double bytes = 0;
    for (int32_t i = f.unit_op_offsets[u]; i < f.unit_op_offsets[u + 1]; ++i) {
      const Op& op = graph.op(f.unit_ops[i]);
      if (op.flops > graph.op(heaviest).flops) heaviest = f.unit_ops[i];
      for (const TensorSpec& t : op.outputs) {
        outputs.push_back(&t);
        bytes += static_cast<double>(t.bytes);
      }
    }
    f.unit_type[u] = f.op_type[heaviest];
    f.unit_output_bytes[u] = static_cast<float>(bytes);
    std::stable_sort(outputs.begin(), outputs.end(), [](const TensorSpec* a, const TensorSpec* b) { return a->bytes > b->bytes; });
    float* row = &f.shape_features[static_cast<size_t>(u) * OpFeatures::kShapeFeatures];
    for (size_t k = 0; k < outputs.size() && k < OpFeatures::kOutputs; ++k) {
      const auto& shape = outputs[k]->shape;
      for (size_t d = 0; d < shape.size() && d < OpFeatures::kDims; ++d) {
        double dim = static_cast<double>(shape[d]);
        // Dimensions past the fourth fold into it, so a 5-D tensor's size still shows.
        if (d + 1 == OpFeatures::kDims) {
          for (size_t e = d + 1; e < shape.size() && dim >= 0; ++e) dim = shape[e] < 0 ? -1 : dim * static_cast<double>(shape[e]);
        }
        row[k * OpFeatures::kDims + d] = DimFeature(dim);
      }
    }
  }
}

// The unit-to-unit edge list (deduplicated, with multiplicities) and each
// unit's nearest neighbours.
std::vector<int64_t> BuildEdges(const Graph& graph, OpFeatures& f) {
  // (src unit, dst unit, bytes of the tensor) per op-level data edge.
  std::vector<std::tuple<uint32_t, uint32_t, int64_t>> flows;
  flows.reserve(graph.data_edges().size());
  for (const DataEdge& e : graph.data_edges()) {
    const uint32_t src = static_cast<uint32_t>(f.unit_of_op[e.src]);
    const uint32_t dst = static_cast<uint32_t>(f.unit_of_op[e.dst]);
    if (src != dst) flows.emplace_back(src, dst, graph.op(e.src).outputs[e.src_output].bytes);
  }
  std::sort(flows.begin(), flows.end());
  std::vector<int64_t> edge_bytes;
  for (size_t i = 0; i < flows.size();) {
    size_t j = i;
    int64_t bytes = 0;
    for (; j < flows.size() && std::get<0>(flows[j]) == std::get<0>(flows[i]) && std::get<1>(flows[j]) == std::get<1>(flows[i]); ++j) {
      bytes = SaturatingAddBytes(bytes, std::get<2>(flows[j]));
    }
    f.edge_src.push_back(static_cast<int32_t>(std::get<0>(flows[i])));
    f.edge_dst.push_back(static_cast<int32_t>(std::get<1>(flows[i])));
    f.edge_count.push_back(static_cast<float>(j - i));
    edge_bytes.push_back(bytes);
    i = j;
  }

  std::vector<std::vector<int32_t>> predecessors(f.num_units), successors(f.num_units);
  for (int32_t e = 0; e < f.num_edges(); ++e) {
    successors[f.edge_src[e]].push_back(f.edge_dst[e]);
    predecessors[f.edge_dst[e]].push_back(f.edge_src[e]);
  }
  f.adjacency.assign(static_cast<size_t>(f.num_units) * OpFeatures::kAdjacencyFeatures, -1.0f);
  const float scale = 1.0f / static_cast<float>(std::max(1, f.num_units));
  auto fill = [&](int32_t u, std::vector<int32_t>& neighbours, float* out) {
    // The nearest in topological order, then listed in that order.
    const size_t n = std::min<size_t>(neighbours.size(), OpFeatures::kNeighbours);
    std::partial_sort(neighbours.begin(), neighbours.begin() + n, neighbours.end(), [u](int32_t a, int32_t b) {
      return std::abs(a - u) != std::abs(b - u) ? std::abs(a - u) < std::abs(b - u) : a < b;
    });
    std::sort(neighbours.begin(), neighbours.begin() + n);
    for (size_t k = 0; k < n; ++k) out[k] = static_cast<float>(neighbours[k]) * scale;
  };
  for (int32_t u = 0; u < f.num_units; ++u) {
    float* row = &f.adjacency[static_cast<size_t>(u) * OpFeatures::kAdjacencyFeatures];
    fill(u, predecessors[u], row);
    fill(u, successors[u], row + OpFeatures::kNeighbours);
  }
  return edge_bytes;
}

// The locality order of the units (see OpFeatures::unit_position).
// `edge_bytes` is BuildEdges' bytes for each unit pair of f.edge_src/dst.
void BuildPositions(const Graph& graph, const std::vector<int64_t>& edge_bytes, OpFeatures& f) {
  const int32_t U = f.num_units;
  // The unit graph with bytes, as the chain-following order reads it.
  Grouping units;
  units.groups.resize(U);
  units.edges.reserve(f.num_edges());
  for (int32_t e = 0; e < f.num_edges(); ++e) units.edges.push_back({f.edge_src[e], f.edge_dst[e], edge_bytes[e]});
  std::vector<int32_t> rank(U);
  {
    const std::vector<int32_t> order = ChainFollowingOrder(units);
    for (int32_t i = 0; i < U; ++i) rank[order[i]] = i;
  }

  // Forward units keep their own rank; the others take the rank of the
  // forward unit they exchange the most bytes with.
  std::vector<char> forward(U, 0);
  bool any_forward = false;
  for (int32_t op = 0; op < f.num_ops; ++op) {
    if (graph.op(op).phase == Phase::kForward) forward[f.unit_of_op[op]] = any_forward = true;
  }
  if (!any_forward) std::fill(forward.begin(), forward.end(), 1);
  std::vector<int32_t> key(U, -1);
  std::vector<int64_t> best_bytes(U, -1);
  for (int32_t u = 0; u < U; ++u) {
    if (forward[u]) key[u] = rank[u];
  }
  std::vector<std::vector<int32_t>> neighbours(U);
  auto consider = [&](int32_t u, int32_t other, int64_t bytes) {
    if (forward[u] || !forward[other]) return;
    if (bytes > best_bytes[u] || (bytes == best_bytes[u] && rank[other] < key[u])) {
      best_bytes[u] = bytes;
      key[u] = rank[other];
    }
  };
  for (const GroupEdge& e : units.edges) {
    consider(e.src, e.dst, e.bytes);
    consider(e.dst, e.src, e.bytes);
    neighbours[e.src].push_back(e.dst);
    neighbours[e.dst].push_back(e.src);
  }
  // Units with no forward neighbour: the key of the nearest keyed unit, by
  // breadth-first search from all keyed units at once (in key order, so the
  // result does not depend on the edge list's order beyond that).
  std::vector<int32_t> queue;
  for (int32_t u = 0; u < U; ++u) {
    if (key[u] >= 0) queue.push_back(u);
  }
  std::stable_sort(queue.begin(), queue.end(), [&](int32_t a, int32_t b) { return key[a] < key[b]; });
  for (size_t head = 0; head < queue.size(); ++head) {
    const int32_t u = queue[head];
    for (int32_t v : neighbours[u]) {
      if (key[v] < 0) {
        key[v] = key[u];
        queue.push_back(v);
      }
    }
  }
  for (int32_t u = 0; u < U; ++u) {
    if (key[u] < 0) key[u] = rank[u];  // no edges at all
  }

  std::vector<int32_t> order(U);
  for (int32_t u = 0; u < U; ++u) order[u] = u;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return std::tie(key[a], rank[a]) < std::tie(key[b], rank[b]); });
  // Spacing: half by count, half by FLOPs, so that equal stretches of the
  // order hold similar work even where a few ops carry most of it.
  std::vector<double> flops(U, 0.0);
  double total_flops = 0;
  for (int32_t op = 0; op < f.num_ops; ++op) {
    const double x = std::isfinite(graph.op(op).flops) ? std::max(0.0, graph.op(op).flops) : 0.0;
    flops[f.unit_of_op[op]] += x;
    total_flops += x;
  }
  const double count_share = total_flops > 0 ? 0.5 : 1.0;
  f.unit_position.assign(U, 0.0f);
  double before = 0;
  for (int32_t u : order) {
    const double weight = count_share / U + (total_flops > 0 ? 0.5 * flops[u] / total_flops : 0.0);
    f.unit_position[u] = static_cast<float>(std::clamp(before + 0.5 * weight, 0.0, std::nextafter(1.0, 0.0)));
    before += weight;
  }
}

}  // namespace

OpFeatures BuildOpFeatures(const Graph& graph, const Cluster& cluster) {
  if (!graph.finalized()) throw Error("graph '" + ForMessage(graph.name) + "' is not finalized");
  OpFeatures f;
  f.num_ops = graph.num_ops();
  BuildUnits(graph, cluster, f);
  BuildTypes(graph, f);
  BuildUnitContents(graph, f);
  const std::vector<int64_t> edge_bytes = BuildEdges(graph, f);
  BuildPositions(graph, edge_bytes, f);
  return f;
}

}  // namespace devplace
