#include "graph/grouping.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace devplace {
namespace {

using testing::MakeOp;

TEST(GroupingTest, ChainCollapsesIntoOneGroup) {
  Graph g;
  int32_t prev = g.AddOp(MakeOp(0, "op0", 1e6, 40));
  for (int i = 1; i < 6; ++i) {
    int32_t next = g.AddOp(MakeOp(i, "op" + std::to_string(i), 1e6, 40));
    g.AddDataEdge(prev, 0, next);
    prev = next;
  }
  g.Finalize();
  Grouping grouping = BuildGrouping(g);
  ASSERT_EQ(grouping.num_groups(), 1);
  EXPECT_EQ(grouping.groups[0].ops.size(), 6u);
  EXPECT_DOUBLE_EQ(grouping.groups[0].flops, 6e6);
  EXPECT_EQ(grouping.groups[0].output_bytes, 240);
  EXPECT_TRUE(grouping.edges.empty());
}

TEST(GroupingTest, FanOutStopsMergingAndEdgesSumBytesOncePerTensor) {
  // a feeds b, c and e; b and c each feed d; e is a sink.
  Graph g;
  int32_t a = g.AddOp(MakeOp(0, "a", 1, 100));
  int32_t b = g.AddOp(MakeOp(1, "b", 1, 10));
  int32_t c = g.AddOp(MakeOp(2, "c", 1, 10));
  int32_t d = g.AddOp(MakeOp(3, "d", 1, 10));
  int32_t e = g.AddOp(MakeOp(4, "e", 1, 10));
  g.AddDataEdge(a, 0, b);
  g.AddDataEdge(a, 0, c);
  g.AddDataEdge(a, 0, e);
  g.AddDataEdge(b, 0, d);
  g.AddDataEdge(c, 0, d);
  g.Finalize();
  Grouping grouping = BuildGrouping(g);
  // b and c each have d as their only consumer, so they merge into d; a
  // then feeds two groups and stays alone.
  ASSERT_EQ(grouping.num_groups(), 3);
  EXPECT_NE(grouping.group_of_op[a], grouping.group_of_op[d]);
  EXPECT_NE(grouping.group_of_op[a], grouping.group_of_op[e]);
  EXPECT_EQ(grouping.group_of_op[b], grouping.group_of_op[d]);
  EXPECT_EQ(grouping.group_of_op[c], grouping.group_of_op[d]);
  // a's one tensor reaches d's group through two edges, but counts once.
  ASSERT_EQ(grouping.edges.size(), 2u);
  EXPECT_EQ(grouping.edges[0].bytes, 100);
  EXPECT_EQ(grouping.edges[1].bytes, 100);
}

TEST(GroupingTest, ProducerOfASingleConsumerGroupJoinsIt) {
  // Once b and c merged into d, a's only consumer is that group: it joins.
  Graph g;
  int32_t a = g.AddOp(MakeOp(0, "a", 1, 100));
  int32_t b = g.AddOp(MakeOp(1, "b", 1, 10));
  int32_t c = g.AddOp(MakeOp(2, "c", 1, 10));
  int32_t d = g.AddOp(MakeOp(3, "d", 1, 10));
  g.AddDataEdge(a, 0, b);
  g.AddDataEdge(a, 0, c);
  g.AddDataEdge(b, 0, d);
  g.AddDataEdge(c, 0, d);
  g.Finalize();
  EXPECT_EQ(BuildGrouping(g).num_groups(), 1);
}

TEST(GroupingTest, KeepsColocationConstraints) {
  // forward f and its gradient g and update u share a group though they are
  // not a single-consumer chain; x feeds both f and g.
  Graph g;
  int32_t x = g.AddOp(MakeOp(0, "x", 1, 10));
  Op f = MakeOp(1, "f", 1, 10);
  f.colocation_group = "layer";
  Op grad = MakeOp(2, "f_grad", 1, 10);
  grad.colocation_group = "layer";
  Op update = MakeOp(3, "f_update", 1, 10);
  update.colocation_group = "layer";
  int32_t fi = g.AddOp(f);
  int32_t loss = g.AddOp(MakeOp(4, "loss", 1, 10));
  int32_t gi = g.AddOp(grad);
  int32_t ui = g.AddOp(update);
  g.AddDataEdge(x, 0, fi);
  g.AddDataEdge(x, 0, gi);
  g.AddDataEdge(fi, 0, loss);
  g.AddDataEdge(loss, 0, gi);
  g.AddDataEdge(gi, 0, ui);
  g.Finalize();
  GroupingOptions no_merge;
  no_merge.merge_single_consumer = false;
  Grouping constrained = BuildGrouping(g, no_merge);
  EXPECT_EQ(constrained.group_of_op[fi], constrained.group_of_op[gi]);
  EXPECT_EQ(constrained.group_of_op[fi], constrained.group_of_op[ui]);
  EXPECT_EQ(constrained.num_groups(), 3);  // x, loss, layer
  EXPECT_EQ(constrained.groups[constrained.group_of_op[fi]].name, "layer");
  // With merging, loss (only consumer: the layer group) joins it too.
  Grouping merged = BuildGrouping(g);
  EXPECT_EQ(merged.group_of_op[loss], merged.group_of_op[fi]);
}

TEST(GroupingTest, CpuOnlyProducerDoesNotDragItsConsumerToTheCpu) {
  Graph g;
  Op input = MakeOp(0, "input", 0, 10);
  input.device_kinds = MaskOf(DeviceKind::kCpu);
  int32_t in = g.AddOp(input);
  int32_t mm = g.AddOp(MakeOp(1, "matmul", 1e9, 10));
  g.AddDataEdge(in, 0, mm);
  g.Finalize();
  Grouping grouping = BuildGrouping(g);
  EXPECT_EQ(grouping.num_groups(), 2);
  EXPECT_EQ(grouping.groups[grouping.group_of_op[mm]].device_kinds, kAllDeviceKinds);
}

TEST(GroupingTest, IdentityGroupingHasAGroupPerOp) {
  Graph g;
  int32_t a = g.AddOp(MakeOp(0, "a", 1, 10));
  int32_t b = g.AddOp(MakeOp(1, "b", 1, 10));
  g.AddDataEdge(a, 0, b);
  g.Finalize();
  Grouping grouping = IdentityGrouping(g);
  EXPECT_EQ(grouping.num_groups(), 2);
  ASSERT_EQ(grouping.edges.size(), 1u);
  EXPECT_EQ(grouping.edges[0].bytes, 10);
}

}  // namespace
}  // namespace devplace
