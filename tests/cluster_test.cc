#include "cluster/cluster.h"

#include <gtest/gtest.h>

#include "cluster/cluster_json.h"
#include "cluster/presets.h"
#include "test_util.h"
#include "util/error.h"

namespace devplace {
namespace {

using testing::TempDir;

TEST(ClusterPresetTest, EveryPresetHasTheDocumentedDevices) {
  struct Expected {
    const char* name;
    int gpus;
  };
  for (Expected e : {Expected{"k80x2", 2}, {"k80x4", 4}, {"p100x2", 2}, {"p100x4", 4}, {"p100x8", 8}, {"h100x8", 8}}) {
    auto cluster = MakeClusterPreset(e.name);
    ASSERT_TRUE(cluster.has_value()) << e.name;
    ASSERT_EQ(cluster->num_devices(), e.gpus + 1) << e.name;
    EXPECT_EQ(cluster->devices[0].name, "cpu:0");
    EXPECT_EQ(cluster->devices[0].kind, DeviceKind::kCpu);
    for (int i = 0; i < e.gpus; ++i) {
      EXPECT_EQ(cluster->FindDevice("gpu:" + std::to_string(i)), i + 1) << e.name;
      EXPECT_EQ(cluster->devices[i + 1].kind, DeviceKind::kGpu);
    }
  }
  EXPECT_FALSE(MakeClusterPreset("k80x3").has_value());
}

TEST(ClusterPresetTest, K80FiguresMatchTheDatasheet) {
  Cluster c = *MakeClusterPreset("k80x2");
  const Device& die = c.devices[1];
  EXPECT_NEAR(die.peak_flops_per_s, 4.365e12, 1e9);  // half of 8.73 TFLOP/s
  EXPECT_NEAR(die.memory_bandwidth_bytes_per_s, 240e9, 1e6);
  EXPECT_EQ(die.memory_bytes, 11441ll * 1024 * 1024);
  EXPECT_EQ(c.devices[0].memory_bytes, 50'000'000'000ll);  // the paper's 50 GB
  // TensorFlow 1.0's share of each die, calibrated to Table 2's NMT OOM.
  EXPECT_EQ(die.reserved_bytes, 4ll << 30);
  EXPECT_EQ(die.usable_memory_bytes(), (11441ll << 20) - (4ll << 30));
  EXPECT_EQ(c.devices[0].reserved_bytes, 0);
}

TEST(ClusterPresetTest, K80DiesOnDifferentBoardsStageThroughTheHost) {
  Cluster c = *MakeClusterPreset("k80x4");
  int32_t gpu0 = c.FindDevice("gpu:0"), gpu1 = c.FindDevice("gpu:1"), gpu2 = c.FindDevice("gpu:2");
  EXPECT_EQ(c.Route(gpu0, gpu1).size(), 1u);  // same board: through the PLX switch
  auto staged = c.Route(gpu0, gpu2);
  ASSERT_EQ(staged.size(), 2u);
  EXPECT_EQ(staged[0].to, c.FindDevice("cpu:0"));
  EXPECT_EQ(staged[1].to, gpu2);
  EXPECT_TRUE(c.Route(gpu0, gpu0).empty());
  // The two dies of a board share its PCIe slot: host-to-die copies to
  // either die queue on one channel; the other board's do not.
  int32_t cpu = c.FindDevice("cpu:0");
  EXPECT_EQ(c.Route(cpu, gpu0)[0].channel, c.Route(cpu, gpu1)[0].channel);
  EXPECT_NE(c.Route(cpu, gpu0)[0].channel, c.Route(cpu, gpu2)[0].channel);
  // Full duplex: the opposite direction is another channel.
  EXPECT_NE(c.Route(cpu, gpu0)[0].channel, c.Route(gpu0, cpu)[0].channel);
}

TEST(ClusterPresetTest, P100x8CubeMeshLinksAndStaging) {
  Cluster c = *MakeClusterPreset("p100x8");
  auto gpu = [&](int i) { return c.FindDevice("gpu:" + std::to_string(i)); };
  EXPECT_EQ(c.Route(gpu(0), gpu(3)).size(), 1u);  // same quad
  EXPECT_EQ(c.Route(gpu(1), gpu(5)).size(), 1u);  // i <-> i+4
  EXPECT_EQ(c.Route(gpu(0), gpu(5)).size(), 2u);  // neither: two hops
}

TEST(ClusterJsonTest, RoundTripsAPreset) {
  TempDir dir;
  Cluster c = *MakeClusterPreset("k80x4");
  std::string path = dir.Write("c.json", ClusterToJson(c).dump());
  Cluster d = LoadClusterFile(path);
  ASSERT_EQ(d.num_devices(), c.num_devices());
  EXPECT_EQ(ClusterToJson(d), ClusterToJson(c));
  EXPECT_EQ(d.Route(1, 3).size(), 2u);
}

TEST(ClusterJsonTest, ResolvesPresetsAndFiles) {
  EXPECT_EQ(ResolveCluster("p100x4").num_devices(), 5);
  try {
    ResolveCluster("k80x9");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k80x9"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("k80x4"), std::string::npos);  // lists the presets
  }
}

std::string ClusterError(const std::string& text) {
  TempDir dir;
  std::string path = dir.Write("c.json", text);
  try {
    LoadClusterFile(path);
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    return message;
  }
  return "";
}

const char* kDevice = R"({"name": "gpu:0", "kind": "gpu", "peak_tflops": 10, "memory_bandwidth_gb_per_s": 700, "memory_gib": 16})";

TEST(ClusterJsonTest, BadClustersGiveClearErrors) {
  std::string two = std::string(R"({"version": 1, "devices": [)") + kDevice +
                    R"(, {"name": "cpu:0", "kind": "cpu", "peak_tflops": 1, "memory_bandwidth_gb_per_s": 60, "memory_gib": 64}])";
  EXPECT_NE(ClusterError(two + R"(})").find("cannot be reached"), std::string::npos);
  EXPECT_NE(ClusterError(two + R"(, "links": [{"between": ["cpu:0", "gpu:7"], "bandwidth_gb_per_s": 12}]})").find("gpu:7"),
            std::string::npos);
  EXPECT_NE(ClusterError(two + R"(, "links": [{"between": ["cpu:0", "gpu:0"], "bandwidth_gb_per_s": -1}]})").find("bandwidth"),
            std::string::npos);
  EXPECT_NE(ClusterError(two + R"(, "links": [{"between": ["cpu:0", "gpu:0"], "bandwidth_gb_per_s": 1, "bus": "x"}]})").find("bus 'x'"),
            std::string::npos);
  EXPECT_NE(ClusterError(std::string(R"({"version": 1, "devices": [)") + kDevice + "," + kDevice + "]}").find("duplicate"),
            std::string::npos);
  EXPECT_NE(ClusterError(R"({"version": 1, "devices": [{"name": "tpu:0", "kind": "tpu"}]})").find("tpu"), std::string::npos);
  EXPECT_NE(ClusterError(R"({"version": 1, "devices": [{"name": "gpu:0", "kind": "gpu"}]})").find("peak_tflops"),
            std::string::npos);
  EXPECT_NE(ClusterError(R"({"version": 1, "devices": []})").find("no devices"), std::string::npos);
  EXPECT_NE(ClusterError("not json").find("not valid JSON"), std::string::npos);
}

TEST(ClusterJsonTest, ReservedMemoryIsReadAndChecked) {
  TempDir dir;
  std::string one = R"({"version": 1, "devices": [{"name": "gpu:0", "kind": "gpu", "peak_tflops": 10,
                        "memory_bandwidth_gb_per_s": 700, "memory_gib": 16, "reserved_gib": 1.5}]})";
  Cluster c = LoadClusterFile(dir.Write("c.json", one));
  EXPECT_EQ(c.devices[0].reserved_bytes, 3ll << 29);
  EXPECT_EQ(c.devices[0].usable_memory_bytes(), (16ll << 30) - (3ll << 29));
  std::string too_much = R"({"version": 1, "devices": [{"name": "gpu:0", "kind": "gpu", "peak_tflops": 10,
                             "memory_bandwidth_gb_per_s": 700, "memory_bytes": 100, "reserved_bytes": 100}]})";
  EXPECT_NE(ClusterError(too_much).find("reserved memory"), std::string::npos);
}

TEST(ClusterJsonTest, SingleDeviceClusterNeedsNoLinks) {
  TempDir dir;
  Cluster c = LoadClusterFile(dir.Write("c.json", std::string(R"({"version": 1, "devices": [)") + kDevice + "]}"));
  EXPECT_EQ(c.num_devices(), 1);
  EXPECT_EQ(c.devices[0].memory_bytes, 16ll * 1024 * 1024 * 1024);
}

}  // namespace
}  // namespace devplace
