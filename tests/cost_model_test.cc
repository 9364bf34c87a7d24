#include "cost/cost_model.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "cli/inputs.h"
#include "import/onnx_training.h"
#include "models/registry.h"
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
  half.compute[static_cast<int>(DeviceKind::kGpu)][static_cast<int>(OpKind::kMatMul)] = 0.5;
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
  EXPECT_DOUBLE_EQ(table.Compute("SomethingNew", DeviceKind::kGpu), table.Compute(OpKind::kOther, DeviceKind::kGpu));
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

// Devices of one kind need not run at one speed (two vCPUs of one VM): an
// entry naming a device applies to that device only, before the kind's.
TEST(CostModelTest, ADevicesOwnEntryComesBeforeItsKinds) {
  Cluster c = MakeTestCluster();
  OpTimeTable table;
  Op op = MakeOp(0, "mm", 3e6, 4 * 7);
  table.Add("MatMul", {7}, DeviceKind::kGpu, 123.0);
  table.Add("MatMul", {7}, DeviceKind::kGpu, 170.0, std::nullopt, "gpu:1");
  table.Add("MatMul", {7}, DeviceKind::kGpu, 171.0, 3e6, "gpu:1");
  CostModel cost(c, table, PerfectEfficiency());
  EXPECT_DOUBLE_EQ(cost.OpTimeUs(op, 1), 123.0);  // gpu:0: the kind's entry
  EXPECT_DOUBLE_EQ(cost.OpTimeUs(op, 2), 171.0);  // gpu:1: its own, by FLOPs first
  Op other_flops = MakeOp(1, "mm2", 2e6, 4 * 7);
  EXPECT_DOUBLE_EQ(cost.OpTimeUs(other_flops, 2), 170.0);
  EXPECT_DOUBLE_EQ(cost.OpTimeUs(other_flops, 1), 123.0);
  EXPECT_EQ(table.Find(op, DeviceKind::kGpu), 123.0);  // no device named: the kind's

  // Written and read back, the device stays; the same key on two devices
  // is two entries, on one device twice a repeat naming it.
  testing::TempDir dir;
  const OpTimeTable loaded = OpTimeTable::Load(dir.Write("t.json", OpTimeTableToJson(table).dump()));
  ASSERT_EQ(loaded.size(), 3u);
  EXPECT_EQ(loaded.Entries()[1].device, "gpu:1");
  EXPECT_EQ(loaded.Find(op, DeviceKind::kGpu, "gpu:1"), 171.0);
  const std::string entry = R"({"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 1, "device": "gpu:1"})";
  try {
    OpTimeTable::Load(dir.Write("twice.json", R"({"times": [)" + entry + ", " + entry + "]}"));
    FAIL() << "a repeated device entry was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("repeats times[0]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'gpu:1'"), std::string::npos) << e.what();
  }
  for (const char* bad : {R"("device": "")", R"("device": 3)", R"("device": null)"}) {
    EXPECT_THROW(OpTimeTable::Load(dir.Write("bad.json", std::string(R"({"times": [{"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 1, )") + bad + "}]}")),
                 Error)
        << bad;
  }
}

// An entry for a device the cluster lacks, or has of another kind, applies
// to nothing: an error naming it, a warning when unmatched entries are
// allowed.
TEST(OpTimeTableTest, AnEntryForADeviceTheClusterLacksIsAnError) {
  const Cluster c = MakeTestCluster();
  for (const auto& [device, kind, hint] : {std::tuple{"gpu:7", DeviceKind::kGpu, "does not have"},
                                           std::tuple{"cpu:0", DeviceKind::kGpu, "is a cpu"}}) {
    OpTimeTable table;
    table.Add("MatMul", {7}, kind, 1.0, std::nullopt, device);
    try {
      CheckOpTimesDevices(table, c, false);
      FAIL() << "an entry for " << device << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(hint), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("times[0]"), std::string::npos) << e.what();
    }
    EXPECT_NE(CheckOpTimesDevices(table, c, true).find("ignored"), std::string::npos);
  }
  OpTimeTable good;
  good.Add("MatMul", {7}, DeviceKind::kGpu, 1.0, std::nullopt, "gpu:1");
  good.Add("MatMul", {7}, DeviceKind::kGpu, 1.0);
  EXPECT_EQ(CheckOpTimesDevices(good, c, false), "");
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

// --- op-times validation (docs/op-times-format.md) ---

std::string LoadError(testing::TempDir& dir, const std::string& entry) {
  const std::string path = dir.Write("t.json", R"({"times": [)" + entry + "]}");
  try {
    OpTimeTable::Load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OpTimeTableTest, RejectsEntriesThatCannotBeMeasurements) {
  testing::TempDir dir;
  const std::string ok = R"("op_type": "MatMul", "device_kind": "gpu")";
  struct Case {
    std::string entry;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"{" + ok + R"(, "time_us": -1})", "time_us"},
      {"{" + ok + R"(, "time_us": 1e13})", "1e12"},
      {"{" + ok + R"(, "time_us": "5"})", "time_us"},
      {"{" + ok + "}", "time_us"},
      {"{" + ok + R"(, "time_us": 1, "shape": [64, -1]})", "shape'[1]"},
      {"{" + ok + R"(, "time_us": 1, "shape": [18446744073709551615]})", "shape'[0]"},
      {"{" + ok + R"(, "time_us": 1, "shape": [1.5]})", "shape'[0]"},
      {"{" + ok + R"(, "time_us": 1, "shape": 7})", "shape"},
      {R"({"op_type": 5, "device_kind": "gpu", "time_us": 1})", "op_type"},
      {R"({"op_type": "", "device_kind": "gpu", "time_us": 1})", "op_type"},
      {R"({"device_kind": "gpu", "time_us": 1})", "op_type"},
      {R"({"op_type": "MatMul", "device_kind": 1, "time_us": 1})", "device_kind"},
      {R"({"op_type": "MatMul", "device_kind": "tpu", "time_us": 1})", "tpu"},
      {"{" + ok + R"(, "time_us": 1, "shap": [7]})", "unknown field 'shap'"},
      {"{" + ok + R"(, "time_us": 1, "flops": -2})", "flops"},
      {"{" + ok + R"(, "time_us": 1, "flops": "2"})", "flops"},
      {"{" + ok + R"(, "time_us": 1, "flops": null})", "flops"},
      {"[]", "must be an object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.entry);
    const std::string message = LoadError(dir, c.entry);
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    EXPECT_NE(message.find("t.json"), std::string::npos) << message;
    EXPECT_NE(message.find("times[0]"), std::string::npos) << message;
  }
}

TEST(OpTimeTableTest, RejectsDuplicateEntriesNamingBoth) {
  testing::TempDir dir;
  const std::string entry = R"({"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 1})";
  const std::string message = LoadError(dir, entry + ", " + R"({"op_type": "Add", "device_kind": "gpu", "time_us": 1}, )" + entry);
  EXPECT_NE(message.find("times[2]"), std::string::npos) << message;
  EXPECT_NE(message.find("repeats times[0]"), std::string::npos) << message;
  // The same type and shape on another device kind is another entry.
  EXPECT_EQ(LoadError(dir, entry + R"(, {"op_type": "MatMul", "shape": [7], "device_kind": "cpu", "time_us": 1})"), "");
}

// Ops of one type and output shape may differ in their inputs (a 1x1 and a
// 3x3 convolution); an entry with "flops" applies only to ops with exactly
// those FLOPs and comes before the entry without.
TEST(OpTimeTableTest, AnEntryWithFlopsAppliesOnlyToOpsWithThoseFlops) {
  testing::TempDir dir;
  const OpTimeTable table = OpTimeTable::Load(dir.Write("t.json", R"({"times": [
      {"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 10},
      {"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 20, "flops": 1000},
      {"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 30, "flops": 0.1}]})"));
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(*table.Find(MakeOp(0, "a", 1000, 28), DeviceKind::kGpu), 20.0);
  EXPECT_EQ(*table.Find(MakeOp(1, "b", 0.1, 28), DeviceKind::kGpu), 30.0);
  EXPECT_EQ(*table.Find(MakeOp(2, "c", 999, 28), DeviceKind::kGpu), 10.0);  // no exact entry: the general one
  EXPECT_FALSE(table.Find(MakeOp(3, "d", 1000, 28), DeviceKind::kCpu).has_value());

  // Without a general entry an op of other FLOPs keeps the formula.
  OpTimeTable exact_only;
  exact_only.Add("MatMul", {7}, DeviceKind::kGpu, 20, 1000.0);
  EXPECT_FALSE(exact_only.Find(MakeOp(0, "a", 999, 28), DeviceKind::kGpu).has_value());

  // Written and read back, entries keep their order, FLOPs and times.
  const std::string path = dir.Write("round.json", OpTimeTableToJson(table).dump(1));
  const std::vector<OpTimeEntry> before = table.Entries(), after = OpTimeTable::Load(path).Entries();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].op_type, before[i].op_type);
    EXPECT_EQ(after[i].shape, before[i].shape);
    EXPECT_EQ(after[i].kind, before[i].kind);
    EXPECT_EQ(after[i].time_us, before[i].time_us);
    EXPECT_EQ(after[i].flops, before[i].flops);
  }

  // The same FLOPs twice is a repeat; other FLOPs are another entry.
  const std::string entry = R"({"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 1, "flops": 5})";
  const std::string message = LoadError(dir, entry + ", " + entry);
  EXPECT_NE(message.find("repeats times[0]"), std::string::npos) << message;
  EXPECT_NE(message.find("flops 5"), std::string::npos) << message;
  EXPECT_EQ(LoadError(dir, entry + R"(, {"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 1, "flops": 6})"), "");
}

TEST(OpTimeTableTest, RejectsUnknownTopLevelFieldsAndNonObjects) {
  testing::TempDir dir;
  EXPECT_THROW(OpTimeTable::Load(dir.Write("a.json", R"({"times": [], "tims": []})")), Error);
  EXPECT_THROW(OpTimeTable::Load(dir.Write("b.json", R"([])")), Error);
  EXPECT_THROW(OpTimeTable::Load(dir.Write("c.json", R"({"times": 5})")), Error);
  EXPECT_THROW(OpTimeTable::Load(dir.Write("d.json", R"({})")), Error);
  EXPECT_EQ(OpTimeTable::Load(dir.Write("e.json", R"({"times": []})")).size(), 0u);
}

TEST(OpTimeTableTest, EchoedNamesAreEscapedAndCut) {
  testing::TempDir dir;
  const std::string message =
      LoadError(dir, R"({"op_type": "MatMul", "device_kind": "g\npu)" + std::string(10000, 'x') + R"(", "time_us": 1})");
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("g\\npu"), std::string::npos) << message;
  EXPECT_LT(message.size(), 600u);
  const std::string path = dir.Write("bad\nname.json", "[]");
  try {
    OpTimeTable::Load(path);
    FAIL() << "a non-object document was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

Graph GraphOfMatMulAndAdd() {
  Graph g;
  g.name = "two";
  Op mm = MakeOp(0, "mm", 1e6, 4 * 7);  // MatMul, output shape {7}
  Op add = MakeOp(1, "add", 1e6, 4 * 9);
  add.type = "AddV2";
  g.AddOp(mm);
  g.AddOp(add);
  g.AddDataEdge(0, 0, 1);
  g.Finalize("test");
  return g;
}

OpTimeTable TableOf(testing::TempDir& dir, const std::string& entries) {
  return OpTimeTable::Load(dir.Write("times.json", R"({"times": [)" + entries + "]}"));
}

TEST(OpTimeTableTest, AnEntryWhoseFlopsNoOpHasMatchesNothing) {
  testing::TempDir dir;
  Graph g;
  Op op = MakeOp(0, "mm", 1000, 28);
  op.type = "MatMul";
  g.AddOp(op);
  g.Finalize("t");
  const OpTimeTable table = TableOf(dir, R"({"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 3, "flops": 999})");
  try {
    CheckOpTimesApply(table, g, false);
    FAIL() << "an entry of other FLOPs was taken as matching";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("other FLOPs"), std::string::npos) << e.what();
  }
  EXPECT_EQ(CheckOpTimesApply(TableOf(dir, R"({"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 3, "flops": 1000})"), g, false), "");
}

TEST(OpTimeTableTest, AnEntryThatMatchesNoOpIsAnErrorNamingItAndTheFile) {
  testing::TempDir dir;
  const Graph g = GraphOfMatMulAndAdd();
  const std::string good = R"({"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 3})";
  EXPECT_EQ(CheckOpTimesApply(TableOf(dir, good), g, false), "");
  // A cpu entry applies too: which kind an op runs on is the placement's.
  EXPECT_EQ(CheckOpTimesApply(TableOf(dir, R"({"op_type": "AddV2", "shape": [9], "device_kind": "cpu", "time_us": 3})"), g, false), "");

  struct Case {
    std::string entry;
    std::string hint;
  };
  const std::vector<Case> cases = {
      {R"({"op_type": "Matmul", "shape": [7], "device_kind": "gpu", "time_us": 3})", "did you mean 'MatMul'"},
      {R"({"op_type": "AddV3", "shape": [9], "device_kind": "gpu", "time_us": 3})", "did you mean 'AddV2'"},
      {R"({"op_type": "MatMul", "shape": [8], "device_kind": "gpu", "time_us": 3})", "shapes: [7]"},
      {R"({"op_type": "Conv2D", "shape": [7], "device_kind": "gpu", "time_us": 3})", "'AddV2', 'MatMul'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.entry);
    const OpTimeTable table = TableOf(dir, good + ", " + c.entry);
    try {
      CheckOpTimesApply(table, g, false);
      FAIL() << "an unmatched entry was accepted";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("times.json"), std::string::npos) << message;
      EXPECT_NE(message.find("times[1]"), std::string::npos) << message;
      EXPECT_NE(message.find(c.hint), std::string::npos) << message;
      EXPECT_NE(message.find("--allow-unmatched-op-times"), std::string::npos) << message;
    }
    // Allowed, it is a warning naming the same entry, and the rest applies.
    const std::string warning = CheckOpTimesApply(table, g, true);
    EXPECT_NE(warning.find("times[1]"), std::string::npos) << warning;
    EXPECT_NE(warning.find("ignored"), std::string::npos) << warning;
  }
}

TEST(OpTimeTableTest, MakeCostModelChecksTheTableAgainstTheGraph) {
  testing::TempDir dir;
  const Graph g = GraphOfMatMulAndAdd();
  const Cluster c = MakeTestCluster();
  OpTimesFlags flags;
  flags.path = dir.Write("typo.json", R"({"times": [
      {"op_type": "MatMul", "shape": [7], "device_kind": "gpu", "time_us": 123},
      {"op_type": "Matmul", "shape": [7], "device_kind": "gpu", "time_us": 5},
      {"op_type": "Conv2D", "device_kind": "gpu", "time_us": 5}]})");
  try {
    MakeCostModel(c, g, flags);
    FAIL() << "unmatched entries were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 more entry matches nothing"), std::string::npos) << e.what();
  }
  flags.allow_unmatched = true;
  CostModel cost = MakeCostModel(c, g, flags);
  EXPECT_DOUBLE_EQ(cost.OpTimeUs(g.op(0), 1), 123.0);
  EXPECT_TRUE(MakeCostModel(c, g, OpTimesFlags{}).measured().empty());
}

// --- Op kinds: the same computation costs the same in every vocabulary ---

TEST(OpKindTest, EachVocabularysNamesGetTheirKind) {
  const std::vector<std::pair<const char*, OpKind>> cases = {
      {"MatMul", OpKind::kMatMul}, {"BatchMatMulV2", OpKind::kMatMul}, {"Gemm", OpKind::kMatMul},
      {"GemmGrad", OpKind::kMatMul}, {"MatMulGrad", OpKind::kMatMul}, {"LSTMGrad", OpKind::kMatMul},
      {"aten.mm", OpKind::kMatMul}, {"aten.addmm", OpKind::kMatMul}, {"aten.bmm", OpKind::kMatMul},
      {"Conv2D", OpKind::kConvolution}, {"Conv", OpKind::kConvolution}, {"aten.convolution", OpKind::kConvolution},
      {"Conv2DBackpropFilter", OpKind::kConvolutionGradient}, {"ConvGrad", OpKind::kConvolutionGradient},
      {"ConvTransposeGrad", OpKind::kConvolutionGradient},
      {"aten.convolution_backward", OpKind::kConvolutionGradient},
      {"Relu", OpKind::kElementwise}, {"ReluGrad", OpKind::kElementwise}, {"aten.relu", OpKind::kElementwise},
      {"aten.add_", OpKind::kElementwise}, {"aten._foreach_mul_", OpKind::kElementwise},
      {"aten.threshold_backward", OpKind::kElementwise}, {"aten._softmax_backward_data", OpKind::kReduction},
      {"aten.native_batch_norm_backward", OpKind::kNormalization}, {"aten.view", OpKind::kDataMovement},
      {"ApplyAdam", OpKind::kOptimizer}, {"VariableV2", OpKind::kSource}, {"Input", OpKind::kSource},
      {"NoOp", OpKind::kOther}};
  for (const auto& [type, kind] : cases) {
    ASSERT_TRUE(FindOpKind(type).has_value()) << type;
    EXPECT_EQ(OpKindName(*FindOpKind(type)), std::string(OpKindName(kind))) << type;
  }
  for (const char* unknown : {"Bogus", "BogusGrad", "Grad", "aten.", "aten.bogus", "aten.bogus_backward",
                              "VariableV2Grad", "Matmul"}) {
    EXPECT_FALSE(FindOpKind(unknown).has_value()) << unknown;
  }
}

TEST(OpKindTest, AnImportedProductCostsWhatTheTensorFlowOneCosts) {
  Cluster c = MakeTestCluster();  // no launch overhead; compute dominates
  CostModel cost(c);             // the default efficiencies
  const std::vector<std::pair<const char*, const char*>> same = {
      {"MatMul", "Gemm"}, {"MatMul", "aten.mm"}, {"MatMul", "aten.addmm"}, {"BatchMatMul", "BatchMatMulV2"},
      {"MatMul", "GemmGrad"}, {"Conv2D", "Conv"}, {"Conv2D", "aten.convolution"},
      {"Conv2DBackpropFilter", "ConvGrad"}, {"Conv2DBackpropInput", "aten.convolution_backward"}};
  for (const auto& [tf, other] : same) {
    Op a = MakeOp(0, "a", 1e9, 4);
    a.type = tf;
    Op b = a;
    b.type = other;
    for (int32_t d : {0, 1}) EXPECT_DOUBLE_EQ(cost.OpTimeUs(b, d), cost.OpTimeUs(a, d)) << other << " on " << d;
  }
  // The matmul rule (0.7 of a GPU's peak), not "other ops" (0.5): 40% apart.
  Op gemm = MakeOp(0, "g", 1e9, 4);
  gemm.type = "Gemm";
  Op unknown = gemm;
  unknown.type = "SomethingNew";
  EXPECT_NEAR(cost.OpTimeUs(unknown, 1) / cost.OpTimeUs(gemm, 1), 1.4, 1e-12);
}

TEST(OpKindTest, EveryTypeTheBuiltInModelsEmitHasAKindOnPurpose) {
  std::set<std::string> types;
  for (const ModelInfo& info : ListModels()) {
    ModelParams params;
    for (const ModelParam& p : info.params) {
      if (p.name == "steps" || p.name == "length") params[p.name] = std::max<int64_t>(p.min, 2);  // fewer ops, same types
    }
    const Graph g = MakeModel(info.name, params);
    for (const Op& op : g.ops()) types.insert(op.type);
  }
  EXPECT_GT(types.size(), 50u);
  for (const std::string& type : types) EXPECT_TRUE(FindOpKind(type).has_value()) << "built-in models emit " << type;
}

TEST(OpKindTest, EveryTypeOnnxTrainingEmitsHasAKindOnPurpose) {
  // The ONNX op types import costs (src/import/onnx_flops.cc), chained
  // after a trainable weight so that each gets its gradient op, then a
  // loss and the optimizer update.
  const std::vector<std::string> onnx_types = {
      "Conv", "ConvTranspose", "Gemm", "MatMul", "MatMulInteger", "LSTM", "GRU", "RNN", "Einsum",
      "BatchNormalization", "InstanceNormalization", "LayerNormalization", "GroupNormalization", "Softmax",
      "LogSoftmax", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool",
      "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceLogSumExp", "ArgMax",
      "ArgMin", "CumSum", "TopK", "Resize", "Upsample",
      // element-wise
      "Add", "Sub", "Mul", "Div", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Sigmoid", "HardSigmoid",
      "HardSwish", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Pow", "Erf", "Gelu", "Neg", "Abs", "Clip", "Min",
      "Max", "Sum", "Mean", "Where", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And",
      "Or", "Xor", "Floor", "Ceil", "Round", "Sign", "Softplus", "Softsign", "Sin", "Cos", "Mish", "IsNaN", "Mod",
      "ThresholdedRelu", "Celu", "BitShift",
      // data movement
      "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "Slice", "Gather",
      "GatherElements", "GatherND", "Identity", "Shape", "Size", "ConstantOfShape", "Expand", "Tile", "Pad",
      "Cast", "CastLike", "Dropout", "Range", "NonZero", "ScatterND", "ScatterElements", "DepthToSpace",
      "SpaceToDepth", "OneHot", "EyeLike", "Trilu"};
  for (int32_t slots : {1, 2}) {  // momentum and Adam
    Graph g;
    Op input;
    input.name = "x";
    input.type = "Input";
    input.outputs.push_back(TensorSpec::Make({4}));
    int32_t previous = g.AddOp(input);
    Op weight = input;
    weight.id = 1;
    weight.name = "w";
    weight.type = "VariableV2";
    weight.persistent_bytes = 16;
    const int32_t w = g.AddOp(weight);
    std::vector<bool> trainable = {false, true};
    for (const std::string& type : onnx_types) {
      Op op = input;
      op.id = g.num_ops();
      op.name = "n" + std::to_string(op.id);
      op.type = type;
      const int32_t i = g.AddOp(op);
      g.AddDataEdge(previous, 0, i);
      g.AddDataEdge(w, 0, i);
      trainable.push_back(false);
      previous = i;
    }
    SynthesizeTraining(g, trainable, {{previous, 0}}, slots);
    std::set<std::string> types;
    for (const Op& op : g.ops()) types.insert(op.type);
    EXPECT_TRUE(types.count("ConvGrad") && types.count("GemmGrad") && types.count("Loss")) << "no gradients made";
    for (const std::string& type : types) EXPECT_TRUE(FindOpKind(type).has_value()) << "ONNX training emits " << type;
  }
}

TEST(OpKindTest, EveryTypeThePyTorchExporterNamesHasAKindOnPurpose) {
  // tools/export_pytorch.py: the views it knows, the ops it costs, and the
  // aten ops a torchvision or transformer training step runs.
  for (const char* name :
       {"view", "_unsafe_view", "t", "transpose", "permute", "expand", "detach", "alias", "unsqueeze", "squeeze",
        "slice", "select", "as_strided", "reshape", "lift_fresh_copy", "_reshape_alias", "split", "unbind",
        "zeros_like", "zeros", "empty", "ones_like", "full", "clone", "copy_", "_to_copy", "mm", "addmm", "bmm",
        "matmul", "baddbmm", "convolution", "convolution_backward", "_softmax", "_log_softmax",
        "_softmax_backward_data", "_log_softmax_backward_data", "native_batch_norm", "native_batch_norm_backward",
        "_native_batch_norm_legit_functional", "native_layer_norm", "native_layer_norm_backward", "sum", "mean",
        "amax", "max", "min", "nll_loss_forward", "nll_loss_backward", "relu", "threshold_backward", "gelu",
        "gelu_backward", "tanh", "tanh_backward", "sigmoid", "sigmoid_backward", "add", "add_", "mul", "mul_",
        "div", "sub", "sqrt", "rsqrt", "addcmul_", "addcdiv_", "lerp_", "_foreach_add_", "_foreach_mul_",
        "_foreach_addcdiv_", "_foreach_sqrt", "where", "ne", "eq", "cat", "stack", "gather", "index_select",
        "embedding", "embedding_dense_backward", "max_pool2d_with_indices", "max_pool2d_with_indices_backward",
        "avg_pool2d", "avg_pool2d_backward", "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward",
        "native_dropout", "native_dropout_backward", "masked_fill", "exp", "log", "pow", "neg", "clamp", "silu",
        "silu_backward", "hardtanh", "hardtanh_backward", "var_mean", "scalar_tensor", "arange"}) {
    EXPECT_TRUE(FindOpKind(std::string("aten.") + name).has_value()) << "aten." << name;
  }
}

}  // namespace
}  // namespace devplace

namespace devplace {
namespace {

TEST(OpTimeTableTest, HostContentionIsReadWrittenAndChecked) {
  testing::TempDir dir;
  const OpTimeTable table = OpTimeTable::Load(
      dir.Write("t.json", R"({"host_contention": 0.25, "times": [{"op_type": "MatMul", "device_kind": "cpu", "time_us": 3}]})"));
  EXPECT_DOUBLE_EQ(table.host_contention(), 0.25);
  const std::string written = dir.Write("again.json", OpTimeTableToJson(table).dump());
  EXPECT_DOUBLE_EQ(OpTimeTable::Load(written).host_contention(), 0.25);
  EXPECT_DOUBLE_EQ(OpTimeTable::Load(dir.Write("none.json", R"({"times": []})")).host_contention(), 0.0);
  for (const char* bad : {R"({"host_contention": -0.1, "times": []})", R"({"host_contention": 11, "times": []})",
                          R"({"host_contention": "high", "times": []})", R"({"host_contention": null, "times": []})"}) {
    EXPECT_THROW(OpTimeTable::Load(dir.Write("bad.json", bad)), Error) << bad;
  }
  OpTimeTable built;
  EXPECT_THROW(built.set_host_contention(std::nan("")), Error);
}

}  // namespace
}  // namespace devplace
