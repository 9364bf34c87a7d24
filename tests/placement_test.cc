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

}  // namespace
}  // namespace devplace
