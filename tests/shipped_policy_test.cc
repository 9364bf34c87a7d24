// The policy devplace ships (policies/gdp_any_cluster.pt): `place --method
// gdp` with no --policy finds and loads it, and its zero-shot placement is
// the same in every process for a fixed seed, on a preset and on a
// generated cluster it never saw.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "run_devplace.h"
#include "test_files.h"

namespace devplace {
namespace {

using testing::Outcome;
using testing::RunDevplace;
using testing::TempDir;

TEST(ShippedPolicyTest, ZeroShotIsTheSameInEveryProcess) {
  ASSERT_TRUE(std::filesystem::is_regular_file(std::string(DEVPLACE_TEST_DATA) + "/../../policies/gdp_any_cluster.pt"));
  TempDir dir;
  const std::string graph = dir.File("graph.json");
  ASSERT_EQ(RunDevplace("generate synthetic --ops 200 --width 3 --seed 4 -o " + graph).exit_code, 0);
  const std::string generated = dir.File("cluster.json");
  ASSERT_EQ(RunDevplace("generate cluster --seed 424242 --profile hetero --max-devices 7 -o " + generated).exit_code, 0);
  for (const std::string& cluster : {std::string("p100x4"), generated}) {
    std::string placements[2];
    for (int run = 0; run < 2; ++run) {
      const std::string out = dir.File("run" + std::to_string(run) + "-" + std::to_string(cluster.size()));
      const Outcome o = RunDevplace("place --graph " + graph + " --cluster " + cluster + " --method gdp --seed 5 --out " + out);
      ASSERT_EQ(o.exit_code, 0) << o.out;
      EXPECT_NE(o.out.find("shipped policy"), std::string::npos) << o.out;
      EXPECT_NE(o.out.find("zero-shot"), std::string::npos) << o.out;
      placements[run] = testing::ReadFile(out + "/best_placement.json");
    }
    EXPECT_FALSE(placements[0].empty()) << cluster;
    EXPECT_EQ(placements[0], placements[1]) << cluster;
  }
}

// A budget still trains a fresh network (no shipped policy read).
TEST(ShippedPolicyTest, ABudgetTrainsAFreshNetwork) {
  TempDir dir;
  const Outcome o = RunDevplace("place --graph tiny --cluster k80x2 --method gdp --max-steps 1 --samples-per-step 2 --out " + dir.File("run"));
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(o.out.find("shipped policy"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace devplace
