#include "graph/grouping.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <numeric>
#include <unordered_map>

namespace devplace {
namespace {

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
    group.persistent_bytes += o.persistent_bytes;
    for (const TensorSpec& t : o.outputs) group.output_bytes += t.bytes;
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
    for (int32_t op = 0; op < n; ++op) {
      int32_t root = sets.Find(op);
      members[root].push_back(op);
      kinds[root] &= graph.op(op).device_kinds;
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
        // Keep the larger member list as the surviving root (cheaper moves).
        int32_t keep = only_consumer;
        int32_t drop = root;
        if (members[drop].size() > members[keep].size()) std::swap(keep, drop);
        sets.MergeInto(drop, keep);
        kinds[keep] &= kinds[drop];
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
