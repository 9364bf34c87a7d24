#include "cluster/cluster.h"

#include <gtest/gtest.h>

#include <limits>

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

// JSON has one number type: a byte count written as 1.6e10 or 17071734784.0
// (as Python's json writes a float) is the integer it names; a fraction, or
// a decimal too large for a double to hold exactly, is refused by name.
TEST(ClusterJsonTest, WholeNumbersWrittenAsDecimalsAreIntegers) {
  auto one_gpu = [](const std::string& memory_bytes) {
    return std::string(R"({"version": 1, "devices": [{"name": "gpu:0", "kind": "gpu", "peak_tflops": 10,)") +
           R"( "memory_bandwidth_gb_per_s": 700, "memory_bytes": )" + memory_bytes + "}]}";
  };
  TempDir dir;
  for (const char* written : {"16000000000", "16000000000.0", "1.6e10", "1.6E+10"}) {
    const Cluster c = LoadClusterFile(dir.Write("c.json", one_gpu(written)));
    EXPECT_EQ(c.devices[0].memory_bytes, 16'000'000'000) << written;
  }
  const std::string fraction = ClusterError(one_gpu("1.5"));
  EXPECT_NE(fraction.find("'memory_bytes' must be an integer, not 1.5"), std::string::npos) << fraction;
  const std::string inexact = ClusterError(one_gpu("1e20"));
  EXPECT_NE(inexact.find("write its digits"), std::string::npos) << inexact;
  const std::string negative = ClusterError(one_gpu("-2.0"));
  EXPECT_NE(negative.find("must be at least 1"), std::string::npos) << negative;
}

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

// A one-device cluster file with `fields` added to (or replacing) the
// device's (a JSON fragment; later keys win).
// kDevice with `fields` added; a field kDevice has is replaced, not
// repeated (a repeated key is refused on its own).
std::string OneDevice(const std::string& fields) {
  std::string device = kDevice;
  for (const char* key : {"\"name\"", "\"kind\"", "\"peak_tflops\"", "\"memory_bandwidth_gb_per_s\"", "\"memory_gib\""}) {
    if (fields.find(key) == std::string::npos) continue;
    const size_t at = device.find(key);
    size_t end = device.find_first_of(",}", at);
    if (device[end] == ',') end += 2;  // the comma and the space after it
    device.erase(at, end - at);
  }
  while (device.size() > 2 && (device[device.size() - 2] == ' ' || device[device.size() - 2] == ',')) device.erase(device.size() - 2, 1);
  device.pop_back();
  const bool empty = device == "{";
  return R"({"version": 1, "devices": [)" + device + (fields.empty() ? "" : (empty ? "" : ", ") + fields) + "}]}";
}

void ExpectOneLineError(const std::string& message) {
  EXPECT_NE(message, "");
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.find("internal"), std::string::npos) << message;
}

// Where a device is on this machine (clusters --detect, devplace run):
// optional, kept through a round trip, checked.
TEST(ClusterJsonTest, CoresAndCudaIndexAreOptionalRoundTripAndChecked) {
  const std::string cpu = R"({"name": "cpu:0", "kind": "cpu", "peak_tflops": 1, "memory_bandwidth_gb_per_s": 50,
                              "memory_gib": 8, "cores": [2, 3], "parallel_ops": 2})";
  const std::string gpu = R"({"name": "gpu:0", "kind": "gpu", "peak_tflops": 10, "memory_bandwidth_gb_per_s": 700,
                              "memory_gib": 16, "cuda_index": 1})";
  const std::string link = R"({"between": ["cpu:0", "gpu:0"], "bandwidth_gb_per_s": 12})";
  const Cluster c = ClusterFromJson(nlohmann::json::parse(R"({"version": 1, "devices": [)" + cpu + ", " + gpu +
                                                          R"(], "links": [)" + link + "]}"),
                                    "host.json");
  EXPECT_EQ(c.devices[0].cores, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(c.devices[0].cuda_index, -1);
  EXPECT_TRUE(c.devices[1].cores.empty());
  EXPECT_EQ(c.devices[1].cuda_index, 1);
  const Cluster again = ClusterFromJson(ClusterToJson(c), "again.json");
  EXPECT_EQ(again.devices[0].cores, c.devices[0].cores);
  EXPECT_EQ(again.devices[1].cuda_index, 1);
  // A preset has neither, and writes neither.
  const nlohmann::json preset = ClusterToJson(*MakeClusterPreset("k80x2"));
  for (const auto& device : preset["devices"]) {
    EXPECT_FALSE(device.contains("cores"));
    EXPECT_FALSE(device.contains("cuda_index"));
  }
  EXPECT_NE(ClusterError(OneDevice(R"("cores": [1])")).find("only a CPU device owns cores"), std::string::npos);
  EXPECT_NE(ClusterError(OneDevice(R"("cores": [-1])")).find("cores"), std::string::npos);
  EXPECT_NE(ClusterError(OneDevice(R"("cores": [1024])")).find("cores"), std::string::npos);
  EXPECT_NE(ClusterError(OneDevice(R"("cuda_index": 64)")).find("cuda_index"), std::string::npos);
}

// A device's wake-up (clusters --detect): optional, kept through a round
// trip, written only where there is one, and checked.
TEST(ClusterJsonTest, WakeUpIsOptionalRoundTripsAndIsChecked) {
  const Cluster c = ClusterFromJson(nlohmann::json::parse(OneDevice(R"("wake_up_us": 70.5, "wake_up_after_idle_us": 200)")),
                                    "host.json");
  EXPECT_EQ(c.devices[0].wake_up_us, 70.5);
  EXPECT_EQ(c.devices[0].wake_up_after_idle_us, 200);
  const Cluster again = ClusterFromJson(ClusterToJson(c), "again.json");
  EXPECT_EQ(again.devices[0].wake_up_us, 70.5);
  EXPECT_EQ(again.devices[0].wake_up_after_idle_us, 200);
  const Cluster plain = ClusterFromJson(nlohmann::json::parse(OneDevice("")), "plain.json");
  EXPECT_EQ(plain.devices[0].wake_up_us, 0);
  EXPECT_FALSE(ClusterToJson(plain)["devices"][0].contains("wake_up_us"));
  for (const char* fields : {R"("wake_up_us": -1)", R"("wake_up_us": "70")", R"("wake_up_us": 1e7)",
                             R"("wake_up_after_idle_us": -5)", R"("wake_up_after_idle_us": 2e6)"}) {
    SCOPED_TRACE(fields);
    const std::string error = ClusterError(OneDevice(fields));
    ExpectOneLineError(error);
    EXPECT_NE(error.find("wake_up"), std::string::npos) << error;
  }
}

TEST(ClusterJsonHostileTest, OneDeviceHelperLoads) { EXPECT_EQ(ClusterError(OneDevice("")), ""); }

TEST(ClusterJsonHostileTest, DeepNestingAndHugeNumbersAreNamedErrors) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string nested = ClusterError(OneDevice(R"("parallel_ops": )" + deep));
  ExpectOneLineError(nested);
  EXPECT_NE(nested.find("nested"), std::string::npos) << nested;
  for (const char* fields : {R"("peak_tflops": 1e400)", R"("memory_gib": -1e999)"}) {
    ExpectOneLineError(ClusterError(OneDevice(fields)));
  }
}

TEST(ClusterJsonHostileTest, EveryFieldOfTheWrongTypeIsANamedError) {
  const char* bad_devices[] = {R"("name": 5)", R"("kind": 1)", R"("peak_tflops": "10")", R"("memory_bandwidth_gb_per_s": [])",
                               R"("memory_bytes": 1.5)", R"("memory_gib": "16")", R"("reserved_bytes": "1")",
                               R"("reserved_gib": {})", R"("launch_overhead_us": "5")", R"("parallel_ops": 1.5)"};
  for (const char* fields : bad_devices) {
    SCOPED_TRACE(fields);
    ExpectOneLineError(ClusterError(OneDevice(fields)));
  }
  std::string device = kDevice;
  const std::string bad_tops[] = {
      R"({"version": 1, "name": 5, "devices": [)" + device + "]}",
      R"({"version": "1", "devices": [)" + device + "]}",
      R"({"version": 1, "devices": {}})",
      R"({"version": 1, "devices": [5]})",
      R"({"version": 1, "devices": [)" + device + R"(], "buses": "x"})",
      R"({"version": 1, "devices": [)" + device + R"(], "buses": [1]})",
      R"({"version": 1, "devices": [)" + device + R"(], "links": {}})",
      R"({"version": 1, "devices": [)" + device + R"(], "links": [5]})",
      R"({"version": 1, "devices": [)" + device + R"(], "links": [{"between": "gpu:0"}]})",
      R"({"version": 1, "devices": [)" + device + R"(], "links": [{"between": [1, 2]}]})",
      R"({"version": 1, "devices": [)" + device + R"(, {"name": "g1", "kind": "gpu", "peak_tflops": 1, "memory_bandwidth_gb_per_s": 1, "memory_gib": 1}], "links": [{"between": ["gpu:0", "g1"], "bandwidth_gb_per_s": "1"}]})",
      R"({"version": 1, "devices": [)" + device + R"(, {"name": "g1", "kind": "gpu", "peak_tflops": 1, "memory_bandwidth_gb_per_s": 1, "memory_gib": 1}], "links": [{"between": ["gpu:0", "g1"], "bandwidth_gb_per_s": 1, "bus": 5}]})",
  };
  for (const std::string& text : bad_tops) {
    SCOPED_TRACE(text);
    ExpectOneLineError(ClusterError(text));
  }
  EXPECT_NE(ClusterError(bad_tops[0]).find("'name'"), std::string::npos);
}

TEST(ClusterJsonHostileTest, NumbersOutOfRangeAreRejectedNotCutOrInfinite) {
  // 2^32 + 1 parallel ops would be 1 in an int32.
  std::string parallel = ClusterError(OneDevice(R"("parallel_ops": 4294967297)"));
  EXPECT_NE(parallel.find("'parallel_ops'"), std::string::npos) << parallel;
  EXPECT_NE(ClusterError(OneDevice(R"("parallel_ops": 1025)")).find("'parallel_ops'"), std::string::npos);
  EXPECT_NE(ClusterError(OneDevice(R"("parallel_ops": 0)")).find("'parallel_ops'"), std::string::npos);
  // 1e300 TFLOP/s is 1e312 FLOP/s: infinite as a double.
  EXPECT_NE(ClusterError(OneDevice(R"("peak_tflops": 1e300)")).find("finite"), std::string::npos);
  EXPECT_NE(ClusterError(OneDevice(R"("memory_bandwidth_gb_per_s": 1e305)")).find("finite"), std::string::npos);
  EXPECT_NE(ClusterError(OneDevice(R"("peak_tflops": 0)")).find("'peak_tflops'"), std::string::npos);
  EXPECT_NE(ClusterError(OneDevice(R"("launch_overhead_us": -1)")).find("'launch_overhead_us'"), std::string::npos);
  // Capacities that do not fit in int64 bytes.
  EXPECT_NE(ClusterError(OneDevice(R"("memory_gib": 1e10)")).find("'memory_gib'"), std::string::npos);
  EXPECT_NE(ClusterError(OneDevice(R"("memory_bytes": 18446744073709551615)")).find("'memory_bytes'"), std::string::npos);
  EXPECT_NE(ClusterError(OneDevice(R"("memory_bytes": 0)")).find("'memory_bytes'"), std::string::npos);
  EXPECT_NE(ClusterError(OneDevice(R"("reserved_bytes": -1)")).find("'reserved_bytes'"), std::string::npos);
  EXPECT_NE(ClusterError(OneDevice(R"("reserved_gib": 16)")).find("reserved memory"), std::string::npos);
  EXPECT_NE(ClusterError(OneDevice(R"("reserved_gib": 1e300)")).find("'reserved_gib'"), std::string::npos);
  std::string two = std::string(R"({"version": 1, "devices": [)") + kDevice +
                    R"(, {"name": "g1", "kind": "gpu", "peak_tflops": 1, "memory_bandwidth_gb_per_s": 1, "memory_gib": 1}], "links": [{"between": ["gpu:0", "g1"], )";
  EXPECT_NE(ClusterError(two + R"("bandwidth_gb_per_s": 1e305}]})").find("finite"), std::string::npos);
  EXPECT_NE(ClusterError(two + R"("bandwidth_gb_per_s": 1, "latency_us": -5}]})").find("'latency_us'"), std::string::npos);
  EXPECT_EQ(ClusterError(two + R"("bandwidth_gb_per_s": 1}]})"), "");
}

TEST(ClusterJsonHostileTest, ClustersBuiltInCodeAreCheckedToo) {
  Cluster c = *MakeClusterPreset("k80x2");
  c.devices[1].peak_flops_per_s = std::numeric_limits<double>::infinity();
  EXPECT_THROW(c.Finalize("built"), Error);
  c = *MakeClusterPreset("k80x2");
  c.links[0].latency_us = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(c.Finalize("built"), Error);
  c = *MakeClusterPreset("k80x2");
  c.devices[1].name = "gpu\xff";
  try {
    c.Finalize("built");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gpu\\xFF"), std::string::npos) << e.what();
  }
  c = *MakeClusterPreset("k80x2");
  c.buses.push_back(c.buses.front());
  EXPECT_THROW(c.Finalize("built"), Error);
  c = *MakeClusterPreset("k80x2");
  for (int i = 0; i < 2100; ++i) c.buses.push_back("extra" + std::to_string(i));
  EXPECT_THROW(c.Finalize("built"), Error);
}

TEST(ClusterJsonHostileTest, ANonUtf8FileNameStillGivesAUsableName) {
  TempDir dir;
  Cluster c = LoadClusterFile(dir.Write("box\xff.json", std::string(R"({"version": 1, "devices": [)") + kDevice + "]}"));
  EXPECT_EQ(c.name, "box\\xFF");
  EXPECT_NO_THROW(ClusterToJson(c).dump());
}

TEST(ClusterJsonHostileTest, NamesInMessagesAreEscapedAndTruncated) {
  std::string kind = ClusterError(R"({"version": 1, "devices": [{"name": "a\nb", "kind": "t\npu"}]})");
  ExpectOneLineError(kind);
  EXPECT_NE(kind.find("a\\nb"), std::string::npos) << kind;
  std::string device = kDevice;
  std::string link = ClusterError(R"({"version": 1, "devices": [)" + device +
                                  R"(], "links": [{"between": ["gpu:0", "x\ny"], "bandwidth_gb_per_s": 1}]})");
  ExpectOneLineError(link);
  EXPECT_NE(link.find("x\\ny"), std::string::npos) << link;
  const std::string huge(8 << 20, 'd');
  std::string message = ClusterError(R"({"version": 1, "devices": [{"name": ")" + huge + R"(", "kind": "tpu"}]})");
  EXPECT_NE(message.find("tpu"), std::string::npos);
  EXPECT_LT(message.size(), 1000u);
  std::string duplicate = ClusterError(std::string(R"({"version": 1, "devices": [)") + kDevice + "," + kDevice + R"(],
      "buses": ["b\n", "b\n"]})");
  ExpectOneLineError(duplicate);
}

TEST(ClusterJsonHostileTest, ResolveClusterNamesWhatItCannotFind) {
  for (const std::string& spec : {std::string(5000, 'c'), std::string("no\nsuch"), std::string(8 << 20, 'x')}) {
    try {
      ResolveCluster(spec);
      FAIL();
    } catch (const Error& e) {
      ExpectOneLineError(e.what());
      EXPECT_LT(std::string(e.what()).size(), 1000u);
    }
  }
}

}  // namespace
}  // namespace devplace
