#include "graph/grouping.h"

#include <gtest/gtest.h>

#include <limits>

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

// A chain of `length` ops, each holding `persistent_bytes` of parameters and
// writing `output_bytes`: a layer graph, an inference graph, a pipeline.
Graph Chain(int length, int64_t persistent_bytes, int64_t output_bytes) {
  Graph g;
  int32_t prev = -1;
  for (int i = 0; i < length; ++i) {
    Op op = MakeOp(i, "layer" + std::to_string(i), 1e6, output_bytes);
    op.persistent_bytes = persistent_bytes;
    int32_t next = g.AddOp(op);
    if (prev >= 0) g.AddDataEdge(prev, 0, next);
    prev = next;
  }
  g.Finalize();
  return g;
}

GroupingOptions BoundedTo(int64_t bytes) {
  GroupingOptions options;
  options.max_group_bytes_of_kind.fill(bytes);
  return options;
}

TEST(GroupingTest, ChainOfHeavyOpsSplitsIntoGroupsUnderTheMemoryBound) {
  // 50 layers of 110 bytes: 5,500 bytes in all, bound 1,000.
  Graph g = Chain(50, 100, 10);
  Grouping grouping = BuildGrouping(g, BoundedTo(1000));
  EXPECT_GE(grouping.num_groups(), 6);  // at least 5500 / 1000, rounded up
  EXPECT_LE(grouping.num_groups(), 12);  // but merged: greedy fills to at least half the bound
  for (const Group& group : grouping.groups) {
    EXPECT_LE(group.memory_bytes(), 1000) << group.name;
    // Each group is one contiguous stretch of the chain.
    for (size_t i = 1; i < group.ops.size(); ++i) EXPECT_EQ(group.ops[i], group.ops[i - 1] + 1) << group.name;
  }
  // Unbounded, the same chain is one group.
  EXPECT_EQ(BuildGrouping(g).num_groups(), 1);
}

TEST(GroupingTest, ChainOfLightOpsStillMergesUnderTheBound) {
  Graph g = Chain(50, 100, 10);
  Grouping grouping = BuildGrouping(g, BoundedTo(5500));  // exactly the whole chain
  ASSERT_EQ(grouping.num_groups(), 1);
  EXPECT_EQ(grouping.groups[0].memory_bytes(), 5500);
}

TEST(GroupingTest, MemoryBoundNeverSplitsAColocationGroup) {
  // Layer 1's forward op, gradient and update must share a device, though
  // together they are over the bound; nothing merges into them either.
  Graph g;
  auto heavy = [](int64_t id, const std::string& name) {
    Op op = MakeOp(id, name, 1, 10);
    op.persistent_bytes = 400;
    op.colocation_group = "layer1";
    return op;
  };
  int32_t x = g.AddOp(MakeOp(0, "x", 1, 10));
  int32_t f = g.AddOp(heavy(1, "f"));
  int32_t loss = g.AddOp(MakeOp(2, "loss", 1, 10));
  int32_t grad = g.AddOp(heavy(3, "f_grad"));
  int32_t update = g.AddOp(heavy(4, "f_update"));
  g.AddDataEdge(x, 0, f);
  g.AddDataEdge(f, 0, loss);
  g.AddDataEdge(loss, 0, grad);
  g.AddDataEdge(grad, 0, update);
  g.Finalize();
  Grouping grouping = BuildGrouping(g, BoundedTo(1000));
  EXPECT_EQ(grouping.group_of_op[f], grouping.group_of_op[grad]);
  EXPECT_EQ(grouping.group_of_op[f], grouping.group_of_op[update]);
  EXPECT_EQ(grouping.groups[grouping.group_of_op[f]].memory_bytes(), 1230);
  // x and loss each feed only the layer, but joining would pass the bound.
  EXPECT_NE(grouping.group_of_op[x], grouping.group_of_op[f]);
  EXPECT_NE(grouping.group_of_op[loss], grouping.group_of_op[f]);
  EXPECT_EQ(grouping.num_groups(), 3);
}

TEST(GroupingTest, BoundIsThatOfTheSmallestKindTheGroupCanRunOn) {
  GroupingOptions options;
  options.max_group_bytes_of_kind[static_cast<int>(DeviceKind::kCpu)] = 5000;
  options.max_group_bytes_of_kind[static_cast<int>(DeviceKind::kGpu)] = 1000;
  EXPECT_EQ(options.MaxGroupBytes(kAllDeviceKinds), 1000);
  EXPECT_EQ(options.MaxGroupBytes(MaskOf(DeviceKind::kCpu)), 5000);
  EXPECT_EQ(options.MaxGroupBytes(MaskOf(DeviceKind::kGpu)), 1000);
  EXPECT_EQ(GroupingOptions{}.MaxGroupBytes(kAllDeviceKinds), kNoGroupBytesBound);

  // A CPU-only chain merges up to the CPU's bound, not the GPU's.
  Graph g;
  int32_t prev = -1;
  for (int i = 0; i < 20; ++i) {
    Op op = MakeOp(i, "host" + std::to_string(i), 1, 10);
    op.persistent_bytes = 90;
    op.device_kinds = MaskOf(DeviceKind::kCpu);
    int32_t next = g.AddOp(op);
    if (prev >= 0) g.AddDataEdge(prev, 0, next);
    prev = next;
  }
  g.Finalize();
  EXPECT_EQ(BuildGrouping(g, options).num_groups(), 1);  // 2,000 bytes <= 5,000
}

TEST(GroupingTest, GroupSizeSaturatesInsteadOfWrapping) {
  // A size past int64 must count as over any bound, not wrap to a small one.
  Group group;
  group.persistent_bytes = std::numeric_limits<int64_t>::max();
  group.output_bytes = 1;
  EXPECT_EQ(group.memory_bytes(), kNoGroupBytesBound);
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
