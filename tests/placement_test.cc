#include "sim/placement.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/error.h"

namespace devplace {
namespace {

using testing::MakeOp;
using testing::MakeTestCluster;
using testing::TempDir;

Graph ThreeOps() {
  Graph g;
  g.name = "three";
  Op input = MakeOp(0, "input", 0, 4);
  input.device_kinds = MaskOf(DeviceKind::kCpu);
  input.expert_stage = kExpertHost;
  int32_t a = g.AddOp(input);
  Op mid = MakeOp(1, "mid", 1e6, 4);
  mid.expert_stage = 0;
  int32_t b = g.AddOp(mid);
  Op last = MakeOp(2, "last", 1e6, 4);
  last.expert_stage = 1;
  int32_t c = g.AddOp(last);
  g.AddDataEdge(a, 0, b);
  g.AddDataEdge(b, 0, c);
  g.expert_stages = 2;
  g.Finalize();
  return g;
}

TEST(PlacementTest, SingleDeviceSendsOpsItCannotRunToTheFirstThatCan) {
  Graph g = ThreeOps();
  Cluster c = MakeTestCluster();
  EXPECT_EQ(SingleDevicePlacement(g, c, 2), (Placement{0, 2, 2}));
  EXPECT_EQ(ResolvePlacement("single:gpu:1", g, c), (Placement{0, 2, 2}));
  EXPECT_THROW(ResolvePlacement("single:gpu:9", g, c), Error);
}

TEST(PlacementTest, ExpertPlacementSplitsStagesOverTheGpus) {
  Graph g = ThreeOps();
  Cluster c = MakeTestCluster();
  EXPECT_EQ(ExpertPlacement(g, c), (Placement{0, 1, 2}));
  EXPECT_EQ(ResolvePlacement("expert", g, c), (Placement{0, 1, 2}));
  Graph none = ThreeOps();
  none.expert_stages = 0;
  EXPECT_THROW(ExpertPlacement(none, c), Error);
}

TEST(PlacementTest, CheckFindsWrongKindsAndSplitGroups) {
  Graph g = ThreeOps();
  Cluster c = MakeTestCluster();
  EXPECT_FALSE(CheckPlacement(g, c, {0, 1, 2}).has_value());
  auto wrong_kind = CheckPlacement(g, c, {1, 1, 2});
  ASSERT_TRUE(wrong_kind.has_value());
  EXPECT_NE(wrong_kind->find("'input'"), std::string::npos);
  EXPECT_TRUE(CheckPlacement(g, c, {0, 1}).has_value());
  EXPECT_TRUE(CheckPlacement(g, c, {0, 1, 7}).has_value());
}

TEST(PlacementTest, FileRoundTripAndErrors) {
  Graph g = ThreeOps();
  Cluster c = MakeTestCluster();
  TempDir dir;
  std::string path = dir.File("p.json");
  SavePlacementFile(path, g, c, {0, 2, 1});
  EXPECT_EQ(LoadPlacementFile(path, g, c), (Placement{0, 2, 1}));
  EXPECT_EQ(ResolvePlacement(path, g, c), (Placement{0, 2, 1}));

  auto error_of = [&](const std::string& text) {
    std::string file = dir.Write("bad.json", text);
    try {
      LoadPlacementFile(file, g, c);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(R"({"placement": {"input": "cpu:0", "mid": "gpu:0", "ghost": "gpu:0", "last": "gpu:0"}})").find("ghost"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"placement": {"input": "cpu:0", "mid": "tpu:0", "last": "gpu:0"}})").find("tpu:0"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"placement": {"input": "cpu:0", "mid": "gpu:0"}})").find("'last' has no device"),
            std::string::npos);
  EXPECT_NE(error_of(R"([1])").find("'placement'"), std::string::npos);
}

TEST(PlacementTest, HostileFilesGiveOneNamedLine) {
  Graph g = ThreeOps();
  Cluster c = MakeTestCluster();
  TempDir dir;
  auto error_of = [&](const std::string& text) {
    std::string file = dir.Write("bad.json", text);
    try {
      LoadPlacementFile(file, g, c);
    } catch (const Error& e) {
      std::string message = e.what();
      EXPECT_NE(message.find(file), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      return message;
    }
    return std::string();
  };
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(error_of(R"({"placement": {"input": )" + deep + "}}").find("nested"), std::string::npos);
  EXPECT_NE(error_of(R"({"placement": {"input": 1e400}})").find("number"), std::string::npos);
  for (const char* text : {R"({"placement": {"input": 5, "mid": "gpu:0", "last": "gpu:0"}})",
                           R"({"placement": {"input": ["cpu:0"], "mid": "gpu:0", "last": "gpu:0"}})",
                           R"({"placement": ["input"]})", R"({"placement": "x"})", R"({"placement": null})", "5",
                           R"({"placement": {"input": "cpu:0", "mid": "gpu:0", "last": "gpu:0", "a\nb": "gpu:0"}})",
                           R"({"placement": {"input": "c\npu", "mid": "gpu:0", "last": "gpu:0"}})"}) {
    SCOPED_TRACE(text);
    EXPECT_NE(error_of(text), "");
  }
  EXPECT_NE(error_of(R"({"placement": {"input": 5}})").find("must be a string, not 5"), std::string::npos);
  const std::string huge(8 << 20, 'o');
  std::string message = error_of(R"({"placement": {")" + huge + R"(": "cpu:0"}})");
  EXPECT_NE(message.find("unknown op"), std::string::npos);
  EXPECT_LT(message.size(), 1000u);
}

TEST(PlacementTest, SpecsAndNamesAreEscapedInMessages) {
  Graph g = ThreeOps();
  Cluster c = MakeTestCluster();
  try {
    ResolvePlacement("single:gpu\n9", g, c);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  Graph named = ThreeOps();
  named.mutable_op(0).name = "in\nput";
  named.Finalize();
  auto problem = CheckPlacement(named, c, {1, 1, 2});
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("in\\nput"), std::string::npos) << *problem;
}

}  // namespace
}  // namespace devplace
