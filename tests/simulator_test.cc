#include "sim/simulator.h"

#include <gtest/gtest.h>

#include "sim/measure.h"
#include "test_util.h"

namespace devplace {
namespace {

using testing::MakeOp;
using testing::MakeTestCluster;
using testing::PerfectEfficiency;

// Devices in the test cluster.
constexpr int32_t kCpu = 0, kGpu0 = 1, kGpu1 = 2;

struct Fixture {
  Graph graph;
  Cluster cluster;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<Simulator> sim;

  Fixture(Graph g, Cluster c) : graph(std::move(g)), cluster(std::move(c)) {
    graph.Finalize("test graph");
    cost = std::make_unique<CostModel>(cluster, OpTimeTable{}, PerfectEfficiency());
    sim = std::make_unique<Simulator>(graph, cluster, *cost);
  }
  SimResult Run(const Placement& p, SimOptions options = {}) { return sim->Run(p, options); }
};

// a -> b -> c, 1, 2 and 3 us.
Graph Chain() {
  Graph g;
  int32_t a = g.AddOp(MakeOp(0, "a", 1e6, 100));
  int32_t b = g.AddOp(MakeOp(1, "b", 2e6, 200));
  int32_t c = g.AddOp(MakeOp(2, "c", 3e6, 300));
  g.AddDataEdge(a, 0, b);
  g.AddDataEdge(b, 0, c);
  return g;
}

TEST(SimulatorTest, ChainOnOneDeviceTakesTheSumOfItsOps) {
  Fixture f(Chain(), MakeTestCluster());
  SimResult r = f.Run({kGpu0, kGpu0, kGpu0});
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_DOUBLE_EQ(r.step_time_us, 6.0);
  EXPECT_DOUBLE_EQ(r.devices[kGpu0].compute_us[static_cast<int>(Phase::kForward)], 6.0);
  EXPECT_EQ(r.devices[kGpu0].num_ops, 3);
  EXPECT_EQ(r.devices[kGpu0].bytes_in, 0);
  EXPECT_DOUBLE_EQ(r.devices[kGpu1].compute_total_us(), 0.0);
}

// Two independent chains x1 -> x2 and y1 -> y2 of 1 us ops.
Graph TwoBranches() {
  Graph g;
  int32_t x1 = g.AddOp(MakeOp(0, "x1", 1e6, 4));
  int32_t x2 = g.AddOp(MakeOp(1, "x2", 1e6, 4));
  int32_t y1 = g.AddOp(MakeOp(2, "y1", 1e6, 4));
  int32_t y2 = g.AddOp(MakeOp(3, "y2", 1e6, 4));
  g.AddDataEdge(x1, 0, x2);
  g.AddDataEdge(y1, 0, y2);
  return g;
}

TEST(SimulatorTest, IndependentBranchesOnTwoDevicesRunInParallel) {
  Fixture f(TwoBranches(), MakeTestCluster());
  EXPECT_DOUBLE_EQ(f.Run({kGpu0, kGpu0, kGpu0, kGpu0}).step_time_us, 4.0);
  SimResult split = f.Run({kGpu0, kGpu0, kGpu1, kGpu1});
  EXPECT_DOUBLE_EQ(split.step_time_us, 2.0);
  EXPECT_EQ(split.devices[kGpu0].bytes_in + split.devices[kGpu1].bytes_in, 0);
}

TEST(SimulatorTest, DeviceRunningTwoOpsAtOnceOverlapsThem) {
  Cluster c = MakeTestCluster();
  c.devices[kGpu0].parallel_ops = 2;
  Fixture f(TwoBranches(), c);
  EXPECT_DOUBLE_EQ(f.Run({kGpu0, kGpu0, kGpu0, kGpu0}).step_time_us, 2.0);
}

TEST(SimulatorTest, TransferOnTheCriticalPathAddsItsTime) {
  // a (1 us) on gpu:0 sends 2000 bytes to b (1 us) on gpu:1: latency 0.5 us
  // + 2000 B at 1e9 B/s = 2 us, so 1 + 2.5 + 1.
  Graph g;
  int32_t a = g.AddOp(MakeOp(0, "a", 1e6, 2000));
  int32_t b = g.AddOp(MakeOp(1, "b", 1e6, 4));
  g.AddDataEdge(a, 0, b);
  Fixture f(std::move(g), MakeTestCluster());
  SimResult r = f.Run({kGpu0, kGpu1}, SimOptions{.record_events = true});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r.step_time_us, 4.5);
  EXPECT_DOUBLE_EQ(r.devices[kGpu0].copy_out_us, 2.5);
  EXPECT_DOUBLE_EQ(r.devices[kGpu1].copy_in_us, 2.5);
  EXPECT_EQ(r.devices[kGpu1].bytes_in, 2000);
  ASSERT_EQ(r.transfer_events.size(), 1u);
  EXPECT_DOUBLE_EQ(r.transfer_events[0].start_us, 1.0);
  ASSERT_EQ(r.op_events.size(), 2u);
  EXPECT_DOUBLE_EQ(r.op_events[1].start_us, 3.5);
}

TEST(SimulatorTest, StagedTransferTakesBothHops) {
  Graph g;
  int32_t a = g.AddOp(MakeOp(0, "a", 1e6, 2000));
  int32_t b = g.AddOp(MakeOp(1, "b", 1e6, 4));
  g.AddDataEdge(a, 0, b);
  Fixture f(std::move(g), MakeTestCluster(false, /*peer_link=*/false));
  SimResult r = f.Run({kGpu0, kGpu1});
  EXPECT_DOUBLE_EQ(r.step_time_us, 1.0 + 2 * 2.5 + 1.0);
  EXPECT_EQ(r.devices[kCpu].bytes_in, 2000);  // staged through host memory
}

// One CPU op with two 1000-byte outputs, one for each GPU (1 us op,
// 0.5 + 1 us per transfer, 1 us consumers).
Graph Fanout() {
  Graph g;
  Op a = MakeOp(0, "a", 1e6, 1000);
  a.outputs.push_back(a.outputs[0]);
  int32_t ai = g.AddOp(a);
  int32_t b = g.AddOp(MakeOp(1, "b", 1e6, 4));
  int32_t c = g.AddOp(MakeOp(2, "c", 1e6, 4));
  g.AddDataEdge(ai, 0, b);
  g.AddDataEdge(ai, 1, c);
  return g;
}

TEST(SimulatorTest, SharedBusSerialisesTwoTransfers) {
  Fixture separate(Fanout(), MakeTestCluster(/*shared_bus=*/false));
  EXPECT_DOUBLE_EQ(separate.Run({kCpu, kGpu0, kGpu1}).step_time_us, 1.0 + 1.5 + 1.0);
  Fixture shared(Fanout(), MakeTestCluster(/*shared_bus=*/true));
  // The second copy waits for the first: 1 + 1.5 + 1.5 + 1.
  EXPECT_DOUBLE_EQ(shared.Run({kCpu, kGpu0, kGpu1}).step_time_us, 5.0);
}

TEST(SimulatorTest, OneLinkCarriesOneTransferAtATime) {
  // Both outputs go to gpu:0 over the same link: serialised even with no bus.
  Fixture f(Fanout(), MakeTestCluster());
  EXPECT_DOUBLE_EQ(f.Run({kCpu, kGpu0, kGpu0}).step_time_us, 1.0 + 1.5 + 1.5 + 1.0);
}

TEST(SimulatorTest, TensorConsumedTwiceOnARemoteDeviceIsSentOnce) {
  Graph g;
  int32_t a = g.AddOp(MakeOp(0, "a", 1e6, 1000));
  int32_t b = g.AddOp(MakeOp(1, "b", 1e6, 4));
  int32_t c = g.AddOp(MakeOp(2, "c", 1e6, 4));
  g.AddDataEdge(a, 0, b);
  g.AddDataEdge(a, 0, c);
  g.AddDataEdge(a, 0, c);  // c reads it twice, too
  Fixture f(std::move(g), MakeTestCluster());
  SimResult r = f.Run({kGpu0, kGpu1, kGpu1}, SimOptions{.record_events = true});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.transfer_events.size(), 1u);
  EXPECT_EQ(r.devices[kGpu1].bytes_in, 1000);
  EXPECT_DOUBLE_EQ(r.step_time_us, 1.0 + 1.5 + 2.0);
  // The received copy is freed once both consumers ran.
  EXPECT_EQ(r.memory_events.back().bytes_in_use, 0);
}

TEST(SimulatorTest, PeakMemoryOfAChainMatchesTheHandCount) {
  // Persistent 1000 B on a's device. a writes 100, b writes 200 and holds
  // 50 scratch, c writes 300. While c runs: 1000 + b's 200 + c's 300 =
  // 1500 (a's output was freed when b finished). While b runs: 1000 + 100
  // + 200 + 50 = 1350.
  Graph g = Chain();
  g.mutable_op(0).persistent_bytes = 1000;
  g.mutable_op(1).temporary_bytes = 50;
  Fixture f(std::move(g), MakeTestCluster());
  SimResult r = f.Run({kGpu0, kGpu0, kGpu0}, SimOptions{.record_events = true});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.devices[kGpu0].peak_memory_bytes, 1500);
  EXPECT_EQ(r.devices[kGpu0].persistent_bytes, 1000);
  EXPECT_EQ(r.memory_events.back().bytes_in_use, 1000);  // only the parameters remain
}

TEST(SimulatorTest, ReceivedCopiesCountOnTheReceiver) {
  // a (gpu:0) -> b (gpu:1): gpu:1 holds the 2000-byte copy and b's output.
  Graph g;
  int32_t a = g.AddOp(MakeOp(0, "a", 1e6, 2000));
  int32_t b = g.AddOp(MakeOp(1, "b", 1e6, 400));
  g.AddDataEdge(a, 0, b);
  Fixture f(std::move(g), MakeTestCluster());
  SimResult r = f.Run({kGpu0, kGpu1});
  EXPECT_EQ(r.devices[kGpu1].peak_memory_bytes, 2400);
  EXPECT_EQ(r.devices[kGpu0].peak_memory_bytes, 2000);
}

TEST(SimulatorTest, AVariablesValueIsItsPersistentMemoryNotANewTensor) {
  // w holds 1000 B of weights and hands them out as its 1000 B output; a
  // reads them and writes 100 B; b on the other GPU reads them too.
  Graph g;
  Op w = MakeOp(0, "w", 0, 1000);
  w.persistent_bytes = 1000;
  w.outputs[0].aliases_persistent = true;
  int32_t wi = g.AddOp(w);
  int32_t a = g.AddOp(MakeOp(1, "a", 1e6, 100));
  int32_t b = g.AddOp(MakeOp(2, "b", 1e6, 100));
  g.AddDataEdge(wi, 0, a);
  g.AddDataEdge(wi, 0, b);
  Fixture f(std::move(g), MakeTestCluster());
  SimResult r = f.Run({kGpu0, kGpu0, kGpu1});
  EXPECT_EQ(r.devices[kGpu0].peak_memory_bytes, 1100);  // not 2100
  EXPECT_EQ(r.devices[kGpu1].peak_memory_bytes, 1100);  // the received copy does count
  EXPECT_EQ(r.devices[kGpu1].bytes_in, 1000);
}

TEST(SimulatorTest, OversizedGraphFailsWithOutOfMemory) {
  Graph g = Chain();
  g.mutable_op(0).persistent_bytes = 1000;
  Cluster c = MakeTestCluster();
  c.devices[kGpu0].memory_bytes = 1400;  // parameters fit, activations do not
  c.devices[kGpu1].memory_bytes = 900;   // not even the parameters
  Fixture f(std::move(g), c);
  SimResult activations = f.Run({kGpu0, kGpu0, kGpu0});
  EXPECT_TRUE(activations.oom);
  EXPECT_FALSE(activations.ok());
  EXPECT_TRUE(activations.devices[kGpu0].oom);
  EXPECT_NE(activations.reason.find("gpu:0"), std::string::npos);
  SimResult parameters = f.Run({kGpu1, kGpu1, kGpu1}, SimOptions{.stop_at_oom = true});
  EXPECT_TRUE(parameters.oom);
  EXPECT_FALSE(f.Run({kCpu, kCpu, kCpu}).oom);
}

TEST(SimulatorTest, PlacementOnADeviceThatCannotRunTheOpIsInvalid) {
  Graph g = Chain();
  g.mutable_op(1).device_kinds = MaskOf(DeviceKind::kCpu);
  Fixture f(std::move(g), MakeTestCluster());
  SimResult r = f.Run({kGpu0, kGpu0, kGpu0});
  EXPECT_TRUE(r.invalid);
  EXPECT_NE(r.reason.find("'b'"), std::string::npos) << r.reason;
  EXPECT_TRUE(f.Run({kGpu0, kCpu, kGpu0}).ok());
}

TEST(SimulatorTest, SplitColocationGroupIsInvalid) {
  Graph g = Chain();
  g.mutable_op(0).colocation_group = "g";
  g.mutable_op(2).colocation_group = "g";
  Fixture f(std::move(g), MakeTestCluster());
  EXPECT_TRUE(f.Run({kGpu0, kGpu1, kGpu1}).invalid);
  EXPECT_TRUE(f.Run({kGpu0, kGpu1, kGpu0}).ok());
}

TEST(SimulatorTest, ControlEdgeDelaysItsTarget) {
  Graph g = TwoBranches();
  g.AddControlEdge(1, 2);  // y1 waits for x2
  Fixture f(std::move(g), MakeTestCluster());
  EXPECT_DOUBLE_EQ(f.Run({kGpu0, kGpu0, kGpu1, kGpu1}).step_time_us, 4.0);
}

TEST(SimulatorTest, ReadyOpsRunInTheOrderTheyBecameReady) {
  // r (1 us) releases p and q at once; p was released first because of its
  // edge order, so p runs first. s depends on q only.
  Graph g;
  int32_t r = g.AddOp(MakeOp(0, "r", 1e6, 4));
  int32_t p = g.AddOp(MakeOp(1, "p", 5e6, 4));
  int32_t q = g.AddOp(MakeOp(2, "q", 1e6, 4));
  g.AddDataEdge(r, 0, p);
  g.AddDataEdge(r, 0, q);
  Fixture f(std::move(g), MakeTestCluster());
  SimResult result = f.Run({kGpu0, kGpu0, kGpu0}, SimOptions{.record_events = true});
  ASSERT_EQ(result.op_events.size(), 3u);
  EXPECT_EQ(result.op_events[1].op, p);
  EXPECT_DOUBLE_EQ(result.op_events[2].start_us, 6.0);
}

TEST(SimulatorTest, SameSeedGivesTheSameNoisyResult) {
  Fixture f(TwoBranches(), MakeTestCluster());
  Placement p = {kGpu0, kGpu0, kGpu1, kGpu1};
  SimOptions noisy;
  noisy.noise.jitter = 0.2;
  noisy.seed = 42;
  double first = f.Run(p, noisy).step_time_us;
  EXPECT_DOUBLE_EQ(f.Run(p, noisy).step_time_us, first);
  EXPECT_NE(first, 2.0);  // the noise changed something
  noisy.seed = 43;
  EXPECT_NE(f.Run(p, noisy).step_time_us, first);
}

TEST(SimulatorTest, SporadicFailuresFollowTheirProbabilityAndSeed) {
  Fixture f(TwoBranches(), MakeTestCluster());
  Placement p = {kGpu0, kGpu0, kGpu1, kGpu1};
  SimOptions noisy;
  noisy.noise.failure_probability = 0.3;
  int failures = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    noisy.seed = seed;
    SimResult r = f.Run(p, noisy);
    failures += r.failed;
    EXPECT_EQ(r.failed, f.Run(p, noisy).failed);
  }
  EXPECT_GT(failures, 230);
  EXPECT_LT(failures, 370);
}

TEST(SimulatorTest, MeasuringProtocolDropsTheFirstStep) {
  Fixture f(TwoBranches(), MakeTestCluster());
  Placement p = {kGpu0, kGpu0, kGpu1, kGpu1};
  MeasureOptions m;
  m.steps = 10;
  m.first_step_factor = 5.0;  // a slow first step must not show
  Measurement deterministic = MeasureStepTime(*f.sim, p, m);
  EXPECT_TRUE(deterministic.ok);
  EXPECT_EQ(deterministic.steps_averaged, 9);
  EXPECT_DOUBLE_EQ(deterministic.mean_step_time_us, 2.0);

  m.noise.jitter = 0.1;
  m.seed = 7;
  Measurement a = MeasureStepTime(*f.sim, p, m);
  Measurement b = MeasureStepTime(*f.sim, p, m);
  EXPECT_DOUBLE_EQ(a.mean_step_time_us, b.mean_step_time_us);
  EXPECT_NEAR(a.mean_step_time_us, 2.0, 0.3);
}

TEST(SimulatorTest, PlainPassIgnoresQueuesAndLinks) {
  Fixture f(TwoBranches(), MakeTestCluster());
  EXPECT_DOUBLE_EQ(f.sim->PlainPassUs({kGpu0, kGpu0, kGpu0, kGpu0}), 2.0);
}

TEST(SimulatorTest, RepeatedRunsReuseStateCorrectly) {
  Fixture f(Fanout(), MakeTestCluster(true));
  double first = f.Run({kCpu, kGpu0, kGpu1}).step_time_us;
  f.Run({kGpu0, kGpu0, kGpu0});
  f.Run({kCpu, kCpu, kGpu1});
  EXPECT_DOUBLE_EQ(f.Run({kCpu, kGpu0, kGpu1}).step_time_us, first);
}

}  // namespace
}  // namespace devplace
