// `devplace generate cluster`: the file a seed gives, in separate processes,
// and what simulate makes of it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cluster/cluster_json.h"
#include "run_devplace.h"
#include "test_util.h"

namespace devplace {
namespace {

using testing::Outcome;
using testing::ReadFile;
using testing::RunDevplace;
using testing::TempDir;

TEST(GenerateClusterCliTest, SameSeedWritesTheSameBytesInEveryProcess) {
  TempDir dir;
  for (const std::string profile : {"mixed", "hetero", "tight"}) {
    const std::string a = dir.File(profile + "_a.json"), b = dir.File(profile + "_b.json");
    ASSERT_EQ(RunDevplace("generate cluster --seed 11 --profile " + profile + " -o " + a).exit_code, 0);
    ASSERT_EQ(RunDevplace("generate cluster --seed 11 --profile " + profile + " -o " + b).exit_code, 0);
    EXPECT_EQ(ReadFile(a), ReadFile(b)) << profile;
    // Printed without -o: the same document.
    Outcome printed = RunDevplace("generate cluster --seed 11 --profile " + profile);
    ASSERT_EQ(printed.exit_code, 0) << printed.out;
    EXPECT_EQ(printed.out, ReadFile(a)) << profile;
    const std::string other = dir.File(profile + "_other.json");
    ASSERT_EQ(RunDevplace("generate cluster --seed 12 --profile " + profile + " -o " + other).exit_code, 0);
    EXPECT_NE(ReadFile(other), ReadFile(a)) << profile;
  }
}

TEST(GenerateClusterCliTest, GeneratedFilesSimulateASpreadPlacement) {
  TempDir dir;
  for (const std::string profile : {"mixed", "hetero", "tight"}) {
    for (int seed = 1; seed <= 3; ++seed) {
      const std::string path = dir.File(profile + std::to_string(seed) + ".json");
      Outcome wrote = RunDevplace("generate cluster --seed " + std::to_string(seed) + " --profile " + profile + " -o " + path);
      ASSERT_EQ(wrote.exit_code, 0) << wrote.out;
      EXPECT_NE(wrote.out.find("wrote "), std::string::npos) << wrote.out;
      const Cluster cluster = LoadClusterFile(path);
      EXPECT_EQ(cluster.name, "gen-" + profile + "-" + std::to_string(seed));
      // m_etf spreads the step: its placement simulates on the file.
      const std::string placement = dir.File(profile + std::to_string(seed) + "_placement.json");
      Outcome exported =
          RunDevplace("export --graph tiny --cluster " + path + " --method m_etf -o " + placement);
      ASSERT_EQ(exported.exit_code, 0) << exported.out;
      Outcome simulated = RunDevplace("simulate --graph tiny --cluster " + path + " --placement " + placement);
      ASSERT_EQ(simulated.exit_code, 0) << simulated.out;
      EXPECT_NE(simulated.out.find("step time:"), std::string::npos) << simulated.out;
    }
  }
}

TEST(GenerateClusterCliTest, DeviceCountAndCpuFlagsShapeTheCluster) {
  TempDir dir;
  const std::string path = dir.File("c.json");
  for (int devices : {1, 2, 5, 16, 64}) {
    ASSERT_EQ(RunDevplace("generate cluster --seed 3 --devices " + std::to_string(devices) + " -o " + path).exit_code, 0);
    EXPECT_EQ(LoadClusterFile(path).num_devices(), devices);
  }
  ASSERT_EQ(RunDevplace("generate cluster --seed 3 --min-devices 4 --max-devices 6 -o " + path).exit_code, 0);
  const Cluster ranged = LoadClusterFile(path);
  EXPECT_GE(ranged.num_devices(), 4);
  EXPECT_LE(ranged.num_devices(), 6);
  EXPECT_EQ(ranged.devices[0].kind, DeviceKind::kCpu);
  ASSERT_EQ(RunDevplace("generate cluster --seed 3 --no-cpu --devices 4 -o " + path).exit_code, 0);
  EXPECT_EQ(LoadClusterFile(path).kinds_present(), MaskOf(DeviceKind::kGpu));
}

TEST(GenerateClusterCliTest, BadFlagsAreOneLineAndWriteNothing) {
  TempDir dir;
  const std::string out = dir.File("never.json");
  const std::pair<std::string, std::string> cases[] = {
      {"--seed 1 --min-devices 9 --max-devices 4", "--min-devices 9 is above --max-devices 4"},
      {"--seed 1 --min-devices 20", "(its default)"},
      {"--seed 1 --devices 0", "--devices: must be between 1 and 64 (got 0)"},
      {"--seed 1 --devices 1000000000", "--devices: must be between 1 and 64"},
      {"--seed 1 --max-devices 65", "--max-devices: must be between 1 and 64"},
      {"--seed 1 --profile fast", "unknown --profile 'fast'"},
      {"--seed 1 --profile ''", "--profile: must not be empty"},
      {"--seed nan", "--seed: 'nan' is not a decimal integer"},
      {"--seed 1 --devices nan", "--devices: 'nan'"},
      {"--seed -1", "--seed: must not be negative"},
      {"--seed 99999999999999999999", "--seed: 99999999999999999999 is too large"},
      {"--devices 3", "--seed is required"},
      {"--seed 1 --devices 3 --min-devices 2", "--devices excludes --min-devices"},
  };
  for (const auto& [args, expected] : cases) {
    testing::ExpectCleanError(RunDevplace("generate cluster " + args + " -o " + out), expected);
    EXPECT_FALSE(std::filesystem::exists(out)) << args;
  }
  // The model form's flags before the word `cluster` are refused, not
  // silently ignored.
  testing::ExpectCleanError(RunDevplace("generate --seed 3 cluster --seed 1 -o " + out), "goes after the word `cluster`");
  testing::ExpectCleanError(RunDevplace("generate tiny cluster --seed 1 -o " + out), "do not go together");
  EXPECT_FALSE(std::filesystem::exists(out));
  // The model form still asks for what it needs.
  testing::ExpectCleanError(RunDevplace("generate"), "model is required");
  testing::ExpectCleanError(RunDevplace("generate tiny"), "--output is required");
}

}  // namespace
}  // namespace devplace
