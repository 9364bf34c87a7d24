#include "graph/grouping.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <numeric>
#include <unordered_map>

namespace devplace {
namespace {

// a + b, or kNoGroupBytesBound where that overflows (it then exceeds every
// finite bound, which is what a merge check needs).
int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? kNoGroupBytesBound : sum;
}

int64_t OpMemoryBytes(const Op& op) {
  int64_t bytes = op.persistent_bytes;
  for (const TensorSpec& t : op.outputs) bytes = SaturatingAdd(bytes, t.bytes);
  return bytes;
}

class UnionFind {
 public:
  explicit UnionFind(int32_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int32_t Find(int32_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  // Makes `into` the root of the merged set.
  void MergeInto(int32_t from, int32_t into) { parent_[Find(from)] = Find(into); }

 private:
  std::vector<int32_t> parent_;
};

// Turns a union-find partition into Groups ordered by first topological op.
Grouping Materialize(const Graph& graph, UnionFind& sets) {
  const int32_t n = graph.num_ops();
  Grouping grouping;
  grouping.group_of_op.assign(n, -1);
  std::vector<int32_t> group_of_root(n, -1);
  for (int32_t op : graph.topological_order()) {
    int32_t root = sets.Find(op);
    if (group_of_root[root] < 0) {
      group_of_root[root] = grouping.num_groups();
      grouping.groups.emplace_back();
    }
    int32_t g = group_of_root[root];
    grouping.group_of_op[op] = g;
    Group& group = grouping.groups[g];
    const Op& o = graph.op(op);
    group.ops.push_back(op);
    group.flops += o.flops;
    group.persistent_bytes = SaturatingAdd(group.persistent_bytes, o.persistent_bytes);
    for (const TensorSpec& t : o.outputs) group.output_bytes = SaturatingAdd(group.output_bytes, t.bytes);
    group.device_kinds &= o.device_kinds;
    if (!o.colocation_group.empty()) group.name = o.colocation_group;
  }
  for (Group& group : grouping.groups) {
    if (group.name.empty()) group.name = graph.op(group.ops.back()).name;
  }

  // Edges: each tensor counts once per destination group.
  std::map<std::pair<int32_t, int32_t>, int64_t> bytes_between;
  std::vector<int32_t> seen_groups;
  for (int32_t src = 0; src < n; ++src) {
    auto out = graph.out_data_edges(src);
    for (size_t i = 0; i < out.size();) {
      const int32_t output = graph.data_edges()[out[i]].src_output;
      seen_groups.clear();
      for (; i < out.size() && graph.data_edges()[out[i]].src_output == output; ++i) {
        int32_t dst_group = grouping.group_of_op[graph.data_edges()[out[i]].dst];
        if (dst_group == grouping.group_of_op[src]) continue;
        if (std::find(seen_groups.begin(), seen_groups.end(), dst_group) != seen_groups.end()) continue;
        seen_groups.push_back(dst_group);
        bytes_between[{grouping.group_of_op[src], dst_group}] += graph.op(src).outputs[output].bytes;
      }
    }
    for (int32_t dst : graph.control_successors(src)) {
      int32_t dst_group = grouping.group_of_op[dst];
      if (dst_group != grouping.group_of_op[src]) bytes_between.try_emplace({grouping.group_of_op[src], dst_group}, 0);
    }
  }
  for (const auto& [pair, bytes] : bytes_between) grouping.edges.push_back({pair.first, pair.second, bytes});
  return grouping;
}

}  // namespace

int64_t Group::memory_bytes() const { return SaturatingAdd(persistent_bytes, output_bytes); }

int64_t GroupingOptions::MaxGroupBytes(DeviceKindMask kinds) const {
  int64_t bound = kNoGroupBytesBound;
  for (int k = 0; k < kNumDeviceKinds; ++k) {
    if (kinds & MaskOf(static_cast<DeviceKind>(k))) bound = std::min(bound, max_group_bytes_of_kind[k]);
  }
  return bound;
}

Grouping BuildGrouping(const Graph& graph, const GroupingOptions& options) {
  assert(graph.finalized());
  const int32_t n = graph.num_ops();
  UnionFind sets(n);

  // 1. The given co-location constraints.
  std::unordered_map<std::string, int32_t> first_of_group;
  for (int32_t op = 0; op < n; ++op) {
    const std::string& name = graph.op(op).colocation_group;
    if (name.empty()) continue;
    auto [it, inserted] = first_of_group.emplace(name, op);
    if (!inserted) sets.MergeInto(op, it->second);
  }

  // 2. Merge a group into its only consumer, until nothing merges. Visiting
  // in reverse topological order lets a whole chain collapse in one pass.
  if (options.merge_single_consumer) {
    std::vector<std::vector<int32_t>> members(n);
    std::vector<DeviceKindMask> kinds(n, kAllDeviceKinds);
    std::vector<int64_t> bytes(n, 0);
    for (int32_t op = 0; op < n; ++op) {
      int32_t root = sets.Find(op);
      members[root].push_back(op);
      kinds[root] &= graph.op(op).device_kinds;
      bytes[root] = SaturatingAdd(bytes[root], OpMemoryBytes(graph.op(op)));
    }
    const auto& order = graph.topological_order();
    std::vector<int32_t> visited_in_pass(n, -1);
    bool merged_any = true;
    for (int32_t pass = 0; merged_any; ++pass) {
      merged_any = false;
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        int32_t root = sets.Find(*it);
        if (visited_in_pass[root] == pass) continue;  // each group once a pass
        visited_in_pass[root] = pass;
        int32_t only_consumer = -1;
        bool several = false;
        auto consider = [&](int32_t dst) {
          int32_t other = sets.Find(dst);
          if (other == root || other == only_consumer) return;
          if (only_consumer < 0) {
            only_consumer = other;
          } else {
            several = true;
          }
        };
        for (int32_t op : members[root]) {
          for (int32_t e : graph.out_data_edges(op)) consider(graph.data_edges()[e].dst);
          for (int32_t dst : graph.control_successors(op)) consider(dst);
          if (several) break;
        }
        if (several || only_consumer < 0) continue;
        // Merging must not narrow where the consumer may run.
        if ((kinds[root] & kinds[only_consumer]) != kinds[only_consumer]) continue;
        // Nor make a group too large for the smallest device that could run it.
        const int64_t merged_bytes = SaturatingAdd(bytes[root], bytes[only_consumer]);
        if (merged_bytes > options.MaxGroupBytes(kinds[root] & kinds[only_consumer])) continue;
        // Keep the larger member list as the surviving root (cheaper moves).
        int32_t keep = only_consumer;
        int32_t drop = root;
        if (members[drop].size() > members[keep].size()) std::swap(keep, drop);
        sets.MergeInto(drop, keep);
        kinds[keep] &= kinds[drop];
        bytes[keep] = merged_bytes;
        members[keep].insert(members[keep].end(), members[drop].begin(), members[drop].end());
        members[drop].clear();
        members[drop].shrink_to_fit();
        visited_in_pass[keep] = pass;
        merged_any = true;
      }
    }
  }
  return Materialize(graph, sets);
}

Grouping IdentityGrouping(const Graph& graph) {
  UnionFind sets(graph.num_ops());
  return Materialize(graph, sets);
}

}  // namespace devplace
