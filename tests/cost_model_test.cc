#include "cost/cost_model.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/error.h"

namespace devplace {
namespace {

using testing::MakeOp;
using testing::MakeTestCluster;
using testing::PerfectEfficiency;

TEST(CostModelTest, ComputeBoundOpTakesFlopsOverEffectivePeakPlusLaunch) {
  Cluster c = MakeTestCluster();
  c.devices[1].launch_overhead_us = 7;
  CostModel perfect(c, {}, PerfectEfficiency());
  Op op = MakeOp(0, "mm", 3e6, 4);
  EXPECT_DOUBLE_EQ(perfect.OpTimeUs(op, 1), 3.0 + 7.0);

  EfficiencyTable half = PerfectEfficiency();
  half.compute_by_type[static_cast<int>(DeviceKind::kGpu)]["MatMul"] = 0.5;
  CostModel slower(c, {}, half);
  EXPECT_DOUBLE_EQ(slower.OpTimeUs(op, 1), 6.0 + 7.0);
}

TEST(CostModelTest, MemoryBoundOpTakesBytesOverBandwidth) {
  Cluster c = MakeTestCluster();
  c.devices[1].memory_bandwidth_bytes_per_s = 1e9;  // 1000 bytes per us
  CostModel cost(c, {}, PerfectEfficiency());
  Op op = MakeOp(0, "add", 1e3, 4000);  // 0.001 us of compute
  op.type = "Add";
  op.bytes_read = 8000;
  op.bytes_written = 4000;
  EXPECT_DOUBLE_EQ(cost.OpTimeUs(op, 1), 12.0);
  // Without explicit traffic the outputs' bytes stand in.
  op.bytes_read = op.bytes_written = 0;
  EXPECT_DOUBLE_EQ(cost.OpTimeUs(op, 1), 4.0);
}

TEST(CostModelTest, DefaultEfficiencyFavoursMatmulsOnGpus) {
  EfficiencyTable table = EfficiencyTable::Default();
  EXPECT_GT(table.Compute("MatMul", DeviceKind::kGpu), table.Compute("MatMul", DeviceKind::kCpu));
  EXPECT_GT(table.Compute("MatMul", DeviceKind::kGpu), table.Compute("Conv2DBackpropFilter", DeviceKind::kGpu));
  EXPECT_DOUBLE_EQ(table.Compute("SomethingNew", DeviceKind::kGpu), table.default_compute[1]);
}

TEST(CostModelTest, OpAKindCannotRunIsMarked) {
  Cluster c = MakeTestCluster();
  CostModel cost(c);
  Op op = MakeOp(0, "lookup", 1e3, 4);
  op.device_kinds = MaskOf(DeviceKind::kCpu);
  EXPECT_TRUE(cost.CanRun(op, 0));
  EXPECT_FALSE(cost.CanRun(op, 1));
  EXPECT_EQ(cost.OpTimeUs(op, 1), kCannotRun);
}

TEST(CostModelTest, MeasuredTimeOverridesTheFormula) {
  Cluster c = MakeTestCluster();
  OpTimeTable table;
  Op op = MakeOp(0, "mm", 3e6, 4 * 7);  // output shape {7}
  table.Add("MatMul", {7}, DeviceKind::kGpu, 123.0);
  CostModel cost(c, table, PerfectEfficiency());
  EXPECT_DOUBLE_EQ(cost.OpTimeUs(op, 1), 123.0);
  EXPECT_DOUBLE_EQ(cost.OpTimeUs(op, 0), 3.0);  // no CPU entry: formula
  Op other_shape = MakeOp(1, "mm2", 3e6, 4 * 8);
  EXPECT_DOUBLE_EQ(cost.OpTimeUs(other_shape, 1), 3.0);
}

TEST(CostModelTest, MeasuredTableLoadsFromJsonAndRejectsBadEntries) {
  testing::TempDir dir;
  OpTimeTable table = OpTimeTable::Load(dir.Write(
      "t.json", R"({"times": [{"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 55}]})"));
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(*table.Find(MakeOp(0, "mm", 1, 28), DeviceKind::kGpu), 55.0);
  EXPECT_THROW(OpTimeTable::Load(dir.Write("bad.json", R"({"times": [{"op_type": "MatMul", "device_kind": "npu", "time_us": 1}]})")),
               Error);
  EXPECT_THROW(OpTimeTable::Load(dir.Write("neg.json", R"({"times": [{"op_type": "MatMul", "device_kind": "gpu", "time_us": -1}]})")),
               Error);
}

TEST(CostModelTest, TransferIsLatencyPlusBytesOverBandwidthPerHop) {
  Cluster direct = MakeTestCluster();
  CostModel cost(direct);
  EXPECT_DOUBLE_EQ(cost.TransferTimeUs(1, 2, 2000), 0.5 + 2.0);  // peer link
  Cluster staged = MakeTestCluster(false, /*peer_link=*/false);
  CostModel staged_cost(staged);
  EXPECT_DOUBLE_EQ(staged_cost.TransferTimeUs(1, 2, 2000), 2 * (0.5 + 2.0));  // through the host
  EXPECT_DOUBLE_EQ(cost.TransferTimeUs(1, 1, 2000), 0.0);
}

}  // namespace
}  // namespace devplace
