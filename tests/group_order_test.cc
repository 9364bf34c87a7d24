#include "graph/group_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "models/registry.h"

namespace devplace {
namespace {

// The position of the group named `name` in `grouping`, or -1.
int32_t PositionOf(const Grouping& grouping, const std::string& name) {
  for (int32_t g = 0; g < grouping.num_groups(); ++g) {
    if (grouping.groups[g].name == name) return g;
  }
  return -1;
}

TEST(GroupOrderTest, ReadsAnUnrolledLstmLayerByLayer) {
  Graph graph = MakeModel("rnnlm", {{"layers", 2}, {"hidden", 64}, {"steps", 6}, {"batch", 4}, {"vocab", 100}});
  Grouping topological = BuildGrouping(graph);
  // The graph's own order interleaves the layers step by step...
  EXPECT_LT(PositionOf(topological, "rnnlm/layer_1/cell_0"), PositionOf(topological, "rnnlm/layer_0/cell_5"));

  Grouping chained = RenumberGroups(topological, ChainFollowingOrder(topological));
  // ...the chain-following one reads all of layer 0 before layer 1, each
  // layer's steps in a row.
  const int32_t layer0_first = PositionOf(chained, "rnnlm/layer_0/cell_0");
  const int32_t layer1_first = PositionOf(chained, "rnnlm/layer_1/cell_0");
  ASSERT_GE(layer0_first, 0);
  ASSERT_GE(layer1_first, 0);
  for (int t = 0; t < 6; ++t) {
    EXPECT_EQ(PositionOf(chained, "rnnlm/layer_0/cell_" + std::to_string(t)), layer0_first + t);
    EXPECT_EQ(PositionOf(chained, "rnnlm/layer_1/cell_" + std::to_string(t)), layer1_first + t);
  }
  EXPECT_GT(layer1_first, layer0_first + 5);
}

TEST(GroupOrderTest, IsATopologicalOrderOfTheForwardEdges) {
  Graph graph = MakeModel("nmt", {{"layers", 2}, {"hidden", 32}, {"length", 5}, {"batch", 2}, {"vocab", 50}});
  Grouping grouping = BuildGrouping(graph);
  std::vector<int32_t> order = ChainFollowingOrder(grouping);
  // A permutation of the groups...
  std::vector<int32_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int32_t> identity(grouping.num_groups());
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  // ...in which every edge that goes forward in the graph's order still does.
  std::vector<int32_t> position(order.size());
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int32_t>(i);
  for (const GroupEdge& edge : grouping.edges) {
    if (edge.src < edge.dst) EXPECT_LT(position[edge.src], position[edge.dst]);
  }
}

TEST(GroupOrderTest, RenumberingKeepsEveryOpInItsGroupAndEveryEdge) {
  Graph graph = MakeModel("rnnlm", {{"layers", 2}, {"hidden", 64}, {"steps", 4}, {"batch", 4}, {"vocab", 100}});
  Grouping grouping = BuildGrouping(graph);
  std::vector<int32_t> order = ChainFollowingOrder(grouping);
  Grouping renumbered = RenumberGroups(grouping, order);
  ASSERT_EQ(renumbered.num_groups(), grouping.num_groups());
  for (int32_t g = 0; g < renumbered.num_groups(); ++g) {
    EXPECT_EQ(renumbered.groups[g].name, grouping.groups[order[g]].name);
    for (int32_t op : renumbered.groups[g].ops) EXPECT_EQ(renumbered.group_of_op[op], g);
  }
  ASSERT_EQ(renumbered.edges.size(), grouping.edges.size());
  int64_t bytes_before = 0, bytes_after = 0;
  for (const GroupEdge& e : grouping.edges) bytes_before += e.bytes;
  for (const GroupEdge& e : renumbered.edges) {
    bytes_after += e.bytes;
    EXPECT_NE(e.src, e.dst);
  }
  EXPECT_EQ(bytes_after, bytes_before);
  EXPECT_TRUE(std::is_sorted(renumbered.edges.begin(), renumbered.edges.end(), [](const GroupEdge& a, const GroupEdge& b) {
    return std::tie(a.src, a.dst) < std::tie(b.src, b.dst);
  }));
}

}  // namespace
}  // namespace devplace
