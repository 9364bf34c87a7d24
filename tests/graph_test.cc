#include "graph/graph.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/error.h"

namespace devplace {
namespace {

using testing::MakeOp;

Graph Diamond() {
  // a -> b, a -> c, b -> d, c -> d
  Graph g;
  g.name = "diamond";
  int32_t a = g.AddOp(MakeOp(10, "a", 1e6, 400));
  int32_t b = g.AddOp(MakeOp(11, "b", 1e6, 400));
  int32_t c = g.AddOp(MakeOp(12, "c", 1e6, 400));
  int32_t d = g.AddOp(MakeOp(13, "d", 1e6, 400));
  g.AddDataEdge(a, 0, b);
  g.AddDataEdge(a, 0, c);
  g.AddDataEdge(b, 0, d);
  g.AddDataEdge(c, 0, d);
  return g;
}

TEST(GraphTest, TopologicalOrderRespectsEveryEdge) {
  Graph g = Diamond();
  g.AddControlEdge(2, 1);  // c before b
  g.Finalize();
  const auto& order = g.topological_order();
  ASSERT_EQ(order.size(), 4u);
  std::vector<int> position(4);
  for (int i = 0; i < 4; ++i) position[order[i]] = i;
  for (const DataEdge& e : g.data_edges()) EXPECT_LT(position[e.src], position[e.dst]);
  EXPECT_LT(position[2], position[1]);
}

TEST(GraphTest, AdjacencyListsConsumersAndProducers) {
  Graph g = Diamond();
  g.Finalize();
  EXPECT_EQ(g.out_data_edges(0).size(), 2u);
  EXPECT_EQ(g.in_data_edges(3).size(), 2u);
  EXPECT_EQ(g.in_data_edges(0).size(), 0u);
  EXPECT_EQ(g.FindOp("c"), 2);
  EXPECT_EQ(g.FindOp("nope"), -1);
  EXPECT_DOUBLE_EQ(g.total_flops(), 4e6);
}

TEST(GraphTest, TensorSizeFollowsShapeAndDtype) {
  EXPECT_EQ(TensorSpec::Make({64, 1024}).bytes, 64 * 1024 * 4);
  EXPECT_EQ(TensorSpec::Make({3, 5}, "float16").bytes, 30);
  EXPECT_EQ(TensorSpec::Make({}, "int64").bytes, 8);
}

TEST(GraphTest, CycleIsRejectedNamingAnOpOnIt) {
  Graph g = Diamond();
  g.AddDataEdge(3, 0, 1);  // d -> b closes b -> d -> b
  try {
    g.Finalize("model.json");
    FAIL() << "expected a cycle error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("model.json"), std::string::npos) << message;
    EXPECT_NE(message.find("cycle"), std::string::npos) << message;
    bool names_cycle_op = message.find("'b'") != std::string::npos || message.find("'d'") != std::string::npos;
    EXPECT_TRUE(names_cycle_op) << message;
  }
}

TEST(GraphTest, DuplicateIdsAndNamesAreRejected) {
  Graph ids;
  ids.AddOp(MakeOp(1, "x", 0, 4));
  ids.AddOp(MakeOp(1, "y", 0, 4));
  EXPECT_THROW(ids.Finalize(), Error);
  Graph names;
  names.AddOp(MakeOp(1, "x", 0, 4));
  names.AddOp(MakeOp(2, "x", 0, 4));
  EXPECT_THROW(names.Finalize(), Error);
}

TEST(GraphTest, NegativeSizesAndBadEdgesAreRejected) {
  Graph negative;
  Op op = MakeOp(1, "x", 0, 4);
  op.persistent_bytes = -5;
  negative.AddOp(op);
  EXPECT_THROW(negative.Finalize(), Error);

  Graph bad_output;
  bad_output.AddOp(MakeOp(1, "x", 0, 4));
  bad_output.AddOp(MakeOp(2, "y", 0, 4));
  bad_output.AddDataEdge(0, 3, 1);  // x has one output
  EXPECT_THROW(bad_output.Finalize(), Error);

  Graph self_loop;
  self_loop.AddOp(MakeOp(1, "x", 0, 4));
  self_loop.AddControlEdge(0, 0);
  EXPECT_THROW(self_loop.Finalize(), Error);
}

TEST(GraphTest, ColocationGroupNoKindCanRunIsRejected) {
  Graph g;
  Op cpu_only = MakeOp(1, "lookup", 0, 4);
  cpu_only.device_kinds = MaskOf(DeviceKind::kCpu);
  cpu_only.colocation_group = "g";
  Op gpu_only = MakeOp(2, "kernel", 0, 4);
  gpu_only.device_kinds = MaskOf(DeviceKind::kGpu);
  gpu_only.colocation_group = "g";
  g.AddOp(cpu_only);
  g.AddOp(gpu_only);
  EXPECT_THROW(g.Finalize(), Error);
}

TEST(GraphTest, ExpertStageOutOfRangeIsRejected) {
  Graph g;
  g.expert_stages = 2;
  Op op = MakeOp(1, "x", 0, 4);
  op.expert_stage = 2;
  g.AddOp(op);
  EXPECT_THROW(g.Finalize(), Error);
  g.mutable_op(0).expert_stage = kExpertHost;
  EXPECT_NO_THROW(g.Finalize());
}

}  // namespace
}  // namespace devplace
