#include "graph/group_order.h"

#include <algorithm>
#include <cassert>
#include <tuple>

namespace devplace {

std::vector<int32_t> ChainFollowingOrder(const Grouping& grouping) {
  const int32_t n = grouping.num_groups();
  // Forward edges only (src numbered before dst), heaviest first per source.
  std::vector<std::vector<GroupEdge>> consumers(n);
  std::vector<int32_t> waiting_on(n, 0);
  for (const GroupEdge& edge : grouping.edges) {
    if (edge.src >= edge.dst) continue;
    consumers[edge.src].push_back(edge);
    ++waiting_on[edge.dst];
  }
  for (auto& edges : consumers) {
    std::stable_sort(edges.begin(), edges.end(), [](const GroupEdge& a, const GroupEdge& b) { return a.bytes > b.bytes; });
  }

  // Depth first: the ready set is a stack, and a group's consumers are
  // pushed lightest first so the heaviest is taken next.
  std::vector<int32_t> ready;
  for (int32_t g = n - 1; g >= 0; --g) {
    if (waiting_on[g] == 0) ready.push_back(g);  // lowest-numbered source on top
  }
  std::vector<int32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int32_t g = ready.back();
    ready.pop_back();
    order.push_back(g);
    const auto& edges = consumers[g];
    for (auto it = edges.rbegin(); it != edges.rend(); ++it) {
      if (--waiting_on[it->dst] == 0) ready.push_back(it->dst);
    }
  }
  assert(static_cast<int32_t>(order.size()) == n);
  return order;
}

Grouping RenumberGroups(const Grouping& grouping, const std::vector<int32_t>& order) {
  const int32_t n = grouping.num_groups();
  assert(static_cast<int32_t>(order.size()) == n);
  std::vector<int32_t> new_index(n, -1);
  for (int32_t i = 0; i < n; ++i) new_index[order[i]] = i;

  Grouping renumbered;
  renumbered.groups.reserve(n);
  for (int32_t old : order) renumbered.groups.push_back(grouping.groups[old]);
  renumbered.group_of_op.reserve(grouping.group_of_op.size());
  for (int32_t g : grouping.group_of_op) renumbered.group_of_op.push_back(g < 0 ? g : new_index[g]);
  renumbered.edges.reserve(grouping.edges.size());
  for (const GroupEdge& edge : grouping.edges) renumbered.edges.push_back({new_index[edge.src], new_index[edge.dst], edge.bytes});
  std::sort(renumbered.edges.begin(), renumbered.edges.end(),
            [](const GroupEdge& a, const GroupEdge& b) { return std::tie(a.src, a.dst) < std::tie(b.src, b.dst); });
  return renumbered;
}

}  // namespace devplace
