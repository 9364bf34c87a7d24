// `devplace profile` (exec/profile.h): op times measured on this machine,
// turned into the table the simulator reads. No assertion depends on how
// fast the machine is: only on what the table must say about the run it
// came from (every op has an entry, the entries add back up to the
// measured kernels and overhead) and on how entries are told apart.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <numeric>

#include "cluster/cluster_json.h"
#include "cost/cost_model.h"
#include "exec/profile.h"
#include "exec_fixtures.h"
#include "graph/graph_json.h"
#include "run_devplace.h"
#include "sim/simulator.h"
#include "test_files.h"
#include "util/error.h"

namespace devplace {
namespace {

using testing::HostCluster;
using testing::MakeMlp;
using testing::Mlp;
using testing::RunDevplace;
using testing::TempDir;

TEST(ProfileTest, EveryOpHasAnEntryAndTheEntriesAddUpToTheMeasuredStep) {
  const Mlp m = MakeMlp();
  const Cluster cluster = HostCluster(1);
  REQUIRE_CLUSTER(cluster, 1);
  ProfileOptions options;
  options.steps = 3;
  const OpTimeProfile profile = ProfileOpTimes(m.graph, cluster, options);

  ASSERT_EQ(profile.devices.size(), 1u);
  const ProfiledDevice& d = profile.devices[0];
  EXPECT_EQ(d.ops, m.graph.num_ops());
  EXPECT_GT(d.step_time_us, 0);
  EXPECT_GT(d.kernels_us, 0);
  EXPECT_GE(d.overhead_us_per_op, 0);
  EXPECT_TRUE(d.stand_ins.empty());
  EXPECT_EQ(CheckOpTimesApply(profile.table, m.graph, /*allow_unmatched=*/false), "");

  // On one device running one op at a time, the simulated step is the sum
  // of its ops' entries: the measured kernels plus the executor's share.
  double entries_us = 0;
  for (const Op& op : m.graph.ops()) {
    const auto time_us = profile.table.Find(op, DeviceKind::kCpu);
    ASSERT_TRUE(time_us.has_value()) << op.name;
    EXPECT_GE(*time_us, 0) << op.name;
    entries_us += *time_us;
  }
  // Entries average ops of one key, so their sum is the ops' sum.
  EXPECT_NEAR(entries_us, d.kernels_us + d.ops * d.overhead_us_per_op, 1e-6 * entries_us);
  const CostModel cost(cluster, profile.table);
  Simulator simulator(m.graph, cluster, cost);
  const SimResult simulated = simulator.Run(SingleDevicePlacement(m.graph, cluster, 0));
  ASSERT_TRUE(simulated.ok()) << simulated.reason;
  EXPECT_NEAR(simulated.step_time_us, entries_us, 1e-6 * entries_us);
}

// With two CPU devices of this machine, profile also runs the step on both
// at once and writes how much slower that was as the table's contention;
// the simulator then slows ops on one device while the other computes.
TEST(ProfileTest, TwoHostDevicesGetTheirContentionMeasured) {
  const Mlp m = MakeMlp();
  const Cluster cluster = HostCluster(2);
  REQUIRE_CLUSTER(cluster, 2);
  ProfileOptions options;
  options.steps = 3;
  const OpTimeProfile profile = ProfileOpTimes(m.graph, cluster, options);
  EXPECT_GT(profile.alone_step_time_us, 0);
  EXPECT_GT(profile.loaded_step_time_us, 0);
  const double expected = std::clamp(profile.loaded_step_time_us / profile.alone_step_time_us - 1, 0.0, 10.0);
  EXPECT_DOUBLE_EQ(profile.table.host_contention(), expected);

  // Each device is timed: the first gives the kind's entries, the second
  // entries of its own, one per key, that the cost model reads for it.
  ASSERT_EQ(profile.devices.size(), 2u);
  EXPECT_EQ(profile.devices[1].device, 1);
  EXPECT_EQ(profile.devices[1].ops, m.graph.num_ops());
  size_t own = 0;
  for (const OpTimeEntry& e : profile.table.Entries()) own += e.device == cluster.devices[1].name;
  EXPECT_EQ(own * 2, profile.table.size());
  EXPECT_EQ(CheckOpTimesDevices(profile.table, cluster, /*allow_unmatched=*/false), "");
  const CostModel cost(cluster, profile.table);
  for (const Op& op : m.graph.ops()) {
    EXPECT_EQ(cost.OpTimeUs(op, 1), profile.table.Find(op, DeviceKind::kCpu, cluster.devices[1].name)) << op.name;
    EXPECT_EQ(cost.OpTimeUs(op, 0), profile.table.Find(op, DeviceKind::kCpu)) << op.name;
  }

  const OpTimeProfile one_device = ProfileOpTimes(m.graph, HostCluster(1), options);
  EXPECT_EQ(one_device.loaded_step_time_us, 0);
  EXPECT_EQ(one_device.table.host_contention(), 0);
}

// The perceptron's forward product mm1 ([16, 32] x [32, 32]) and backward
// grad_relu ([16, 8] x [8, 32]) are both MatMuls with a [16, 32] output:
// the table tells them apart by their FLOPs.
TEST(ProfileTest, OpsOfOneTypeAndShapeWithOtherFlopsGetEntriesOfTheirOwn) {
  const Mlp m = MakeMlp();
  ASSERT_EQ(m.graph.op(m.mm1).outputs[0].shape, m.graph.op(m.grad_relu).outputs[0].shape);
  ASSERT_NE(m.graph.op(m.mm1).flops, m.graph.op(m.grad_relu).flops);
  const Cluster cluster = HostCluster(1);
  REQUIRE_CLUSTER(cluster, 1);
  const OpTimeProfile profile = ProfileOpTimes(m.graph, cluster, {});
  EXPECT_GE(profile.entries_with_flops, 2);
  int32_t matmul_entries = 0;
  for (const OpTimeEntry& e : profile.table.Entries()) {
    if (e.op_type == "MatMul" && e.shape == m.graph.op(m.mm1).outputs[0].shape) {
      ++matmul_entries;
      ASSERT_TRUE(e.flops.has_value());
      const int32_t op = *e.flops == m.graph.op(m.mm1).flops ? m.mm1 : m.grad_relu;
      EXPECT_EQ(profile.table.Find(m.graph.op(op), DeviceKind::kCpu), e.time_us);
    }
  }
  EXPECT_EQ(matmul_entries, 2);

  // The file round-trips, FLOPs included.
  TempDir dir;
  const std::string path = dir.Write("times.json", OpTimeTableToJson(profile.table).dump(1));
  const OpTimeTable loaded = OpTimeTable::Load(path);
  ASSERT_EQ(loaded.size(), profile.table.size());
  for (const Op& op : m.graph.ops()) {
    EXPECT_EQ(loaded.Find(op, DeviceKind::kCpu), profile.table.Find(op, DeviceKind::kCpu)) << op.name;
  }
}

TEST(ProfileTest, AGraphTooBigForTheDeviceIsAnErrorNamingIt) {
  const Mlp m = MakeMlp();
  const Cluster cluster = HostCluster(1, /*memory_bytes=*/4096);
  REQUIRE_CLUSTER(cluster, 1);
  try {
    ProfileOpTimes(m.graph, cluster, {});
    FAIL() << "profiled a graph that does not fit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot run on device 'cpu:0' alone"), std::string::npos) << e.what();
  }
}

// End to end: clusters --detect, profile, and simulate with the table.
TEST(ProfileCommandTest, ProfileWritesATableSimulateAccepts) {
  TempDir dir;
  const std::string host = dir.File("host.json");
  ASSERT_EQ(RunDevplace("clusters --detect --no-gpus -o " + host).exit_code, 0);
  const std::string graph = dir.File("mlp.json");
  SaveGraphFile(MakeMlp().graph, graph);
  const std::string table = dir.File("times.json");
  auto profile = RunDevplace("profile --graph " + graph + " --cluster " + host + " --steps 2 -o " + table);
  ASSERT_EQ(profile.exit_code, 0) << profile.out;
  EXPECT_NE(profile.out.find("wrote " + table), std::string::npos) << profile.out;
  auto simulate = RunDevplace("simulate --graph " + graph + " --cluster " + host +
                              " --placement single:cpu:0 --json --op-times " + table);
  ASSERT_EQ(simulate.exit_code, 0) << simulate.out;
  EXPECT_GT(nlohmann::json::parse(simulate.out)["step_time_s"].get<double>(), 0);

  // An output that cannot be written is refused before anything runs, and
  // leaves nothing behind.
  auto unwritable = RunDevplace("profile --graph " + graph + " --cluster " + host + " -o " + dir.File("no/such.json"));
  testing::ExpectCleanError(unwritable, "no/such.json");
  // A preset is not this machine.
  testing::ExpectCleanError(RunDevplace("profile --graph " + graph + " --cluster k80x2 -o " + table), "k80x2");
}

}  // namespace
}  // namespace devplace
