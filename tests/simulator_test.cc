#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include "cluster/cluster_json.h"
#include "cluster/presets.h"
#include "cost/op_time_table.h"
#include "graph/canonical_order.h"
#include "graph/graph_json.h"
#include "models/registry.h"
#include "models/synthetic.h"
#include "report/sim_report.h"
#include "sim/environment.h"
#include "sim/measure.h"
#include "sim/placement.h"
#include "test_util.h"
#include "util/random.h"

#include <nlohmann/json.hpp>

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

// The chain with 1,000 bytes of parameters on its first op...
Graph ChainWithParameters() {
  Graph g = Chain();
  g.mutable_op(0).persistent_bytes = 1000;
  return g;
}

// ...on GPUs too small for it.
Cluster SmallGpusCluster() {
  Cluster c = MakeTestCluster();
  c.devices[kGpu0].memory_bytes = 1400;  // parameters fit, activations do not
  c.devices[kGpu1].memory_bytes = 900;   // not even the parameters
  return c;
}

TEST(SimulatorTest, OversizedGraphFailsWithOutOfMemory) {
  Fixture f(ChainWithParameters(), SmallGpusCluster());
  SimResult activations = f.Run({kGpu0, kGpu0, kGpu0});
  EXPECT_TRUE(activations.oom);
  EXPECT_FALSE(activations.ok());
  EXPECT_TRUE(activations.devices[kGpu0].oom);
  EXPECT_NE(activations.reason.find("gpu:0"), std::string::npos);
  SimResult parameters = f.Run({kGpu1, kGpu1, kGpu1}, SimOptions{.stop_at_oom = true});
  EXPECT_TRUE(parameters.oom);
  EXPECT_FALSE(f.Run({kCpu, kCpu, kCpu}).oom);
}

// OpTimeUs reads the simulator's table, which is kept by slot (canonical
// topological rank), not by op index: on a model whose ops are not stored in
// that order, it must still give each op its own time (the list schedulers
// read it instead of the cost model).
TEST(SimulatorTest, OpTimeUsIsTheCostModelsTimeForEachOpAndDevice) {
  Graph graph = MakeModel("inception_v3");
  Cluster cluster = *MakeClusterPreset("p100x4");
  CostModel cost(cluster);
  Simulator simulator(graph, cluster, cost);
  const std::vector<int32_t> order = CanonicalOrder(graph);
  int32_t renumbered = 0;  // ops whose slot is not their index: what the test is about
  for (int32_t i = 0; i < graph.num_ops(); ++i) renumbered += order[i] != i;
  ASSERT_GT(renumbered, 0);
  int32_t compared = 0;
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    for (int32_t d = 0; d < cluster.num_devices(); ++d) {
      ASSERT_EQ(simulator.OpTimeUs(op, d), cost.OpTimeUs(graph.op(op), d)) << graph.op(op).name << " on " << d;
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
}

// The environment grades a placement out of memory by the share of its peak
// memory beyond the devices' capacities (what HDP's graded failing signal
// reads), measured over the whole step; without measure_overflow, 1.
TEST(EnvironmentTest, OutOfMemoryPlacementsSayHowFarTheyOverflow) {
  Fixture f(ChainWithParameters(), SmallGpusCluster());
  const Placement on_gpu0 = {kGpu0, kGpu0, kGpu0}, on_gpu1 = {kGpu1, kGpu1, kGpu1}, on_cpu = {kCpu, kCpu, kCpu};
  auto share_over = [&](const Placement& p) {
    const SimResult full = f.Run(p);  // to the step's end
    double peak = 0, over = 0;
    for (int32_t d = 0; d < f.cluster.num_devices(); ++d) {
      peak += static_cast<double>(full.devices[d].peak_memory_bytes);
      over += std::max<double>(0, full.devices[d].peak_memory_bytes - f.cluster.devices[d].usable_memory_bytes());
    }
    return over / peak;
  };
  SimulatedEnvironmentOptions graded;
  graded.measure_overflow = true;
  SimulatedEnvironment environment(f.graph, f.cluster, *f.cost, graded);
  const std::vector<Outcome> outcomes = environment.Measure({on_gpu0, on_gpu1, on_cpu}, 0, 0);
  EXPECT_FALSE(outcomes[0].ok);
  EXPECT_TRUE(outcomes[0].oom());
  EXPECT_GT(share_over(on_gpu0), 0);
  EXPECT_DOUBLE_EQ(outcomes[0].memory_overflow, share_over(on_gpu0));
  EXPECT_DOUBLE_EQ(outcomes[1].memory_overflow, share_over(on_gpu1));
  EXPECT_GT(outcomes[1].memory_overflow, outcomes[0].memory_overflow);  // further from fitting
  EXPECT_TRUE(outcomes[2].ok);
  EXPECT_EQ(outcomes[2].memory_overflow, 0);
  EXPECT_FALSE(outcomes[2].oom());

  SimulatedEnvironment flat(f.graph, f.cluster, *f.cost, SimulatedEnvironmentOptions{});
  EXPECT_EQ(flat.MeasureOne(on_gpu0).memory_overflow, 1.0);
  EXPECT_EQ(flat.MeasureOne(on_cpu).memory_overflow, 0);
  // Noise failures are failures, never out of memory.
  SimulatedEnvironmentOptions failing;
  failing.noise.failure_probability = 1;
  failing.measure_overflow = true;
  SimulatedEnvironment unlucky(f.graph, f.cluster, *f.cost, failing);
  const Outcome failed = unlucky.MeasureOne(on_cpu);
  EXPECT_FALSE(failed.ok);
  EXPECT_FALSE(failed.oom());
}

// The batch API: a batch measured by several worker threads gives each
// placement the outcome one thread gives it, noise included (each sample's
// seed is its own, not its thread's), and the deterministic simulator's
// outcome equals a plain run's.
TEST(EnvironmentTest, WorkerThreadsDoNotChangeABatchsOutcomes) {
  Graph graph = MakeModel("tiny");
  Cluster cluster = *MakeClusterPreset("k80x4");
  CostModel cost(cluster);
  Random random(5);
  std::vector<Placement> batch;
  const Grouping grouping = BuildGrouping(graph);
  for (int k = 0; k < 24; ++k) {
    std::vector<int32_t> device_of_group(grouping.num_groups());
    for (int32_t g = 0; g < grouping.num_groups(); ++g) {
      do {
        device_of_group[g] = static_cast<int32_t>(random.Below(cluster.num_devices()));
      } while (!(grouping.groups[g].device_kinds & MaskOf(cluster.devices[device_of_group[g]].kind)));
    }
    batch.push_back(ExpandGroupPlacement(grouping, device_of_group));
  }
  for (bool noisy : {false, true}) {
    SimulatedEnvironmentOptions options;
    if (noisy) options.noise.jitter = 0.2, options.noise.failure_probability = 0.2, options.measure_steps = 3;
    options.workers = 1;
    SimulatedEnvironment one(graph, cluster, cost, options);
    options.workers = 4;
    SimulatedEnvironment four(graph, cluster, cost, options);
    const std::vector<Outcome> a = one.Measure(batch, 7, 1), b = four.Measure(batch, 7, 1);
    ASSERT_EQ(a.size(), batch.size());
    ASSERT_EQ(b.size(), batch.size());
    int32_t ok = 0;
    for (size_t k = 0; k < batch.size(); ++k) {
      EXPECT_EQ(a[k].ok, b[k].ok) << k;
      EXPECT_EQ(a[k].step_time_s, b[k].step_time_s) << k;
      EXPECT_EQ(a[k].memory_overflow, b[k].memory_overflow) << k;
      ok += a[k].ok;
    }
    EXPECT_GT(ok, 0);
    if (!noisy) {
      Simulator sim(graph, cluster, cost);
      for (size_t k = 0; k < batch.size(); ++k) {
        const SimResult r = sim.Run(batch[k]);
        EXPECT_EQ(a[k].ok, r.ok()) << k;
        if (r.ok()) EXPECT_EQ(a[k].step_time_s, r.step_time_s()) << k;
      }
    }
  }
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

// A placement with several faults is refused for the first op by rank that
// has one, whichever check finds it (the checks run in separate sweeps).
TEST(SimulatorTest, AnInvalidPlacementNamesItsFirstFaultyOpByRank) {
  // a -> b -> c -> d; b and d share a group; c can run on the CPU only.
  Graph g;
  int32_t a = g.AddOp(MakeOp(0, "a", 1e6, 4));
  int32_t b = g.AddOp(MakeOp(1, "b", 1e6, 4));
  int32_t c = g.AddOp(MakeOp(2, "c", 1e6, 4));
  int32_t d = g.AddOp(MakeOp(3, "d", 1e6, 4));
  g.AddDataEdge(a, 0, b);
  g.AddDataEdge(b, 0, c);
  g.AddDataEdge(c, 0, d);
  g.mutable_op(b).colocation_group = "g";
  g.mutable_op(d).colocation_group = "g";
  g.mutable_op(c).device_kinds = MaskOf(DeviceKind::kCpu);
  Fixture f(std::move(g), MakeTestCluster());
  auto reason = [&](const Placement& p) {
    SimResult r = f.Run(p);
    EXPECT_TRUE(r.invalid);
    return r.reason;
  };
  // c cannot run on a GPU and d leaves its group: c comes first.
  EXPECT_NE(reason({kGpu0, kGpu0, kGpu0, kGpu1}).find("'c' (MatMul) cannot run on"), std::string::npos);
  // a is on no device and c is misplaced: a.
  EXPECT_NE(reason({7, kGpu0, kGpu0, kGpu0}).find("op 'a' is on no device"), std::string::npos);
  // d leaves its group and nothing before it is wrong.
  EXPECT_NE(reason({kGpu0, kGpu0, kCpu, kGpu1}).find("co-location group 'g' is split across gpu:0 and gpu:1"),
            std::string::npos);
  // d on no device is named so, not as leaving its group.
  EXPECT_NE(reason({kGpu0, kGpu0, kCpu, -1}).find("op 'd' is on no device"), std::string::npos);
  Placement ok = {kGpu0, kGpu1, kCpu, kGpu1};
  EXPECT_TRUE(f.Run(ok).ok()) << f.Run(ok).reason;
  EXPECT_EQ(f.Run(ok).devices[kGpu1].num_ops, 2);
}

TEST(SimulatorTest, ControlEdgeDelaysItsTarget) {
  Graph g = TwoBranches();
  g.AddControlEdge(1, 2);  // y1 waits for x2
  Fixture f(std::move(g), MakeTestCluster());
  EXPECT_DOUBLE_EQ(f.Run({kGpu0, kGpu0, kGpu1, kGpu1}).step_time_us, 4.0);
}

TEST(SimulatorTest, OpsReadyAtTheSameInstantRunByRank) {
  // r (1 us) releases p and q at once. q comes first in the file and in r's
  // edges, but p's name sorts first, so p has the lower rank and runs first.
  Graph g;
  int32_t r = g.AddOp(MakeOp(0, "r", 1e6, 4));
  int32_t q = g.AddOp(MakeOp(2, "q", 1e6, 4));
  int32_t p = g.AddOp(MakeOp(1, "p", 5e6, 4));
  g.AddDataEdge(r, 0, q);
  g.AddDataEdge(r, 0, p);
  Fixture f(std::move(g), MakeTestCluster());
  SimResult result = f.Run({kGpu0, kGpu0, kGpu0}, SimOptions{.record_events = true});
  ASSERT_EQ(result.op_events.size(), 3u);
  EXPECT_EQ(result.op_events[1].op, p);
  EXPECT_DOUBLE_EQ(result.op_events[2].start_us, 6.0);
}

TEST(SimulatorTest, AmongReadyOpsTheHigherRunsFirstThenTheNaturalName) {
  // r releases p, q, x10 and x2 at once. q has a consumer (height 2), the
  // others none (height 1): q runs first although "p" sorts before it.
  // Among the leaves, names compare digits as numbers: p, x2, x10.
  Graph g;
  int32_t r = g.AddOp(MakeOp(0, "r", 1e6, 4));
  int32_t x10 = g.AddOp(MakeOp(1, "x10", 1e6, 4));
  int32_t x2 = g.AddOp(MakeOp(2, "x2", 1e6, 4));
  int32_t p = g.AddOp(MakeOp(3, "p", 1e6, 4));
  int32_t q = g.AddOp(MakeOp(4, "q", 1e6, 4));
  int32_t s = g.AddOp(MakeOp(5, "s", 1e6, 4));
  for (int32_t dst : {x10, x2, p, q}) g.AddDataEdge(r, 0, dst);
  g.AddDataEdge(q, 0, s);
  Fixture f(std::move(g), MakeTestCluster());
  SimResult result = f.Run({kGpu0, kGpu0, kGpu0, kGpu0, kGpu0, kGpu0}, SimOptions{.record_events = true});
  ASSERT_EQ(result.op_events.size(), 6u);
  EXPECT_EQ(result.op_events[1].op, q);
  EXPECT_EQ(result.op_events[2].op, p);
  EXPECT_EQ(result.op_events[3].op, x2);
  EXPECT_EQ(result.op_events[4].op, x10);
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

// --- One graph, one answer: the tie rules (docs/simulator.md, "Ties") ---

TEST(SimulatorTest, OpsReadyEarlierRunFirstWhateverTheirRank) {
  // gpu:0 is busy with "long" until 5 us. "z" becomes ready at 1 us (p2 on
  // the CPU ends), "a" at 3 us (p1 on gpu:1 ends); a has the lower rank
  // (p1 sorts before p2), but z was ready first, so z runs first.
  Graph g;
  int32_t lng = g.AddOp(MakeOp(0, "long", 5e6, 4));
  int32_t p1 = g.AddOp(MakeOp(1, "p1", 3e6, 4));
  int32_t p2 = g.AddOp(MakeOp(2, "p2", 1e6, 4));
  int32_t a = g.AddOp(MakeOp(3, "a", 1e6, 4));
  int32_t z = g.AddOp(MakeOp(4, "z", 1e6, 4));
  g.AddControlEdge(p1, a);
  g.AddControlEdge(p2, z);
  Fixture f(std::move(g), MakeTestCluster());
  Placement placement(5);
  placement[lng] = placement[a] = placement[z] = kGpu0;
  placement[p1] = kGpu1;
  placement[p2] = kCpu;
  SimResult r = f.Run(placement, SimOptions{.record_events = true});
  ASSERT_TRUE(r.ok()) << r.reason;
  double start_a = -1, start_z = -1;
  for (const OpEvent& e : r.op_events) {
    if (e.op == a) start_a = e.start_us;
    if (e.op == z) start_z = e.start_us;
  }
  EXPECT_DOUBLE_EQ(start_z, 5.0);
  EXPECT_DOUBLE_EQ(start_a, 6.0);
}

// Two sources on the CPU (running two ops at once) end at the same instant
// and send 1000 bytes each to gpu:0 over the same link: the lower-ranked
// producer's tensor goes first, whatever the file says.
TEST(SimulatorTest, SendsReachingAChannelTogetherQueueByProducerRank) {
  for (bool a_first_in_file : {true, false}) {
    Graph g;
    std::vector<int32_t> src(2), dst(2);
    for (int i = 0; i < 2; ++i) {
      const int k = a_first_in_file ? i : 1 - i;  // 0 = "a_src", 1 = "b_src"
      src[k] = g.AddOp(MakeOp(k, k == 0 ? "a_src" : "b_src", 1e6, 1000));
    }
    dst[0] = g.AddOp(MakeOp(2, "c1", 1e6, 4));
    dst[1] = g.AddOp(MakeOp(3, "c2", 1e6, 4));
    g.AddDataEdge(src[1], 0, dst[1]);
    g.AddDataEdge(src[0], 0, dst[0]);
    Cluster c = MakeTestCluster();
    c.devices[kCpu].parallel_ops = 2;
    Fixture f(std::move(g), c);
    Placement placement(4, kGpu0);
    placement[src[0]] = placement[src[1]] = kCpu;
    SimResult r = f.Run(placement, SimOptions{.record_events = true});
    ASSERT_EQ(r.transfer_events.size(), 2u);
    EXPECT_DOUBLE_EQ(r.transfer_events[0].start_us, 1.0);  // both reached the channel then
    EXPECT_EQ(r.transfer_events[0].src_op, src[0]) << "file order " << a_first_in_file;
    EXPECT_EQ(r.transfer_events[1].src_op, src[1]);
    EXPECT_GT(r.transfer_events[1].start_us, r.transfer_events[0].start_us);
  }
}

TEST(SimulatorTest, OneTensorForTwoDevicesOnOneBusGoesToTheFirstDeviceFirst) {
  // a's output is read on gpu:1 and gpu:0; both copies share the host bus.
  Graph g;
  int32_t a = g.AddOp(MakeOp(0, "a", 1e6, 1000));
  int32_t on1 = g.AddOp(MakeOp(1, "b", 1e6, 4));
  int32_t on0 = g.AddOp(MakeOp(2, "c", 1e6, 4));
  g.AddDataEdge(a, 0, on1);
  g.AddDataEdge(a, 0, on0);
  Fixture f(std::move(g), MakeTestCluster(/*shared_bus=*/true));
  SimResult r = f.Run({kCpu, kGpu1, kGpu0}, SimOptions{.record_events = true});
  ASSERT_EQ(r.transfer_events.size(), 2u);
  EXPECT_EQ(r.transfer_events[0].to_device, kGpu0);
  EXPECT_EQ(r.transfer_events[1].to_device, kGpu1);
}

// Without a peer link, gpu:0 -> gpu:1 stages through the host. The staged
// tensor reaches the host -> gpu:1 channel at 1.5 us, exactly when an op on
// the host ends and sends there too (0-byte tensors: every hop is its 0.5 us
// latency). They queue by producer rank, not "in flight first".
TEST(SimulatorTest, StagedAndNewTransfersReachingAChannelTogetherQueueByRank) {
  for (bool staged_sorts_first : {true, false}) {
    Graph g;
    int32_t staged = g.AddOp(MakeOp(0, staged_sorts_first ? "a_staged" : "z_staged", 1e6, 0));
    int32_t fresh = g.AddOp(MakeOp(1, staged_sorts_first ? "z_fresh" : "a_fresh", 1.5e6, 0));
    int32_t r1 = g.AddOp(MakeOp(2, "r1", 1e6, 4));
    int32_t r2 = g.AddOp(MakeOp(3, "r2", 1e6, 4));
    g.AddDataEdge(staged, 0, r1);
    g.AddDataEdge(fresh, 0, r2);
    Fixture f(std::move(g), MakeTestCluster(false, /*peer_link=*/false));
    SimResult r = f.Run({kGpu0, kCpu, kGpu1, kGpu1}, SimOptions{.record_events = true});
    ASSERT_TRUE(r.ok()) << r.reason;
    std::vector<const TransferEvent*> to_gpu1;
    for (const TransferEvent& e : r.transfer_events) {
      if (e.from_device == kCpu && e.to_device == kGpu1) to_gpu1.push_back(&e);
    }
    ASSERT_EQ(to_gpu1.size(), 2u);
    EXPECT_DOUBLE_EQ(to_gpu1[0]->start_us, 1.5);  // the two really tie
    EXPECT_EQ(to_gpu1[0]->src_op, staged_sorts_first ? staged : fresh);
    EXPECT_EQ(to_gpu1[1]->src_op, staged_sorts_first ? fresh : staged);
  }
}

// gpu:0 runs two ops at once. "a" (3 us) and "s" (1 us) start at 0; s's
// 1500-byte output goes to gpu:1 (0.5 + 1.5 us), and its arrival at 3 us
// frees it on gpu:0, the instant a ends and b starts, allocating 1000
// bytes. Frees come first: the peak is 4 + 1500, not 4 + 1500 + 1000.
TEST(SimulatorTest, AFreeAndAnAllocationAtOneInstantCountFreeFirst) {
  for (const char* first_name : {"a", "x"}) {
    Graph g;
    int32_t a = g.AddOp(MakeOp(0, first_name, 3e6, 4));
    int32_t s = g.AddOp(MakeOp(1, "s", 1e6, 1500));
    int32_t b = g.AddOp(MakeOp(2, "b", 1e6, 1000));
    int32_t r = g.AddOp(MakeOp(3, "r", 1e6, 4));
    g.AddDataEdge(a, 0, b);
    g.AddDataEdge(s, 0, r);
    Cluster c = MakeTestCluster();
    c.devices[kGpu0].parallel_ops = 2;
    Fixture f(std::move(g), c);
    SimResult result = f.Run({kGpu0, kGpu0, kGpu0, kGpu1}, SimOptions{.record_events = true});
    ASSERT_TRUE(result.ok()) << result.reason;
    ASSERT_EQ(result.transfer_events.size(), 1u);
    EXPECT_DOUBLE_EQ(result.transfer_events[0].end_us, 3.0);  // the tie is real
    EXPECT_EQ(result.devices[kGpu0].peak_memory_bytes, 1504) << first_name;
  }
}

TEST(SimulatorTest, EqualRoutesGoThroughTheFirstDeviceWhateverTheLinkOrder) {
  // a -> d in two hops, through b (device 1) or c (device 2), equally wide.
  for (bool c_links_first : {true, false}) {
    Cluster cluster;
    cluster.name = "square";
    for (const char* name : {"a", "b", "c", "d"}) cluster.devices.push_back(testing::MakeDevice(name, DeviceKind::kGpu));
    std::vector<Link> via_b = {{0, 1, 1e9, 1, -1}, {1, 3, 1e9, 1, -1}};
    std::vector<Link> via_c = {{0, 2, 1e9, 1, -1}, {2, 3, 1e9, 1, -1}};
    for (const auto& links : c_links_first ? std::vector{via_c, via_b} : std::vector{via_b, via_c}) {
      cluster.links.insert(cluster.links.end(), links.begin(), links.end());
    }
    cluster.Finalize("square");
    auto route = cluster.Route(0, 3);
    ASSERT_EQ(route.size(), 2u);
    EXPECT_EQ(route[0].to, 1) << "links of c first: " << c_links_first;
    auto back = cluster.Route(3, 0);
    ASSERT_EQ(back.size(), 2u);
    EXPECT_EQ(back[0].to, 1);
    // A wider route wins over device order.
    cluster.links[c_links_first ? 0 : 2].bandwidth_bytes_per_s = 2e9;
    cluster.links[c_links_first ? 1 : 3].bandwidth_bytes_per_s = 2e9;
    cluster.Finalize("square");
    EXPECT_EQ(cluster.Route(0, 3)[0].to, 2);
  }
}

// --- Permuting a graph file changes no result ---

// The same graph with its ops (and edges) listed in another order; ids and
// names are kept. `order[k]` is the old index of the op that comes k-th.
Graph Permuted(const Graph& g, const std::vector<int32_t>& order, Random& random) {
  std::vector<int32_t> new_index(g.num_ops());
  Graph out;
  out.name = g.name;
  out.expert_stages = g.expert_stages;
  for (int32_t k = 0; k < g.num_ops(); ++k) {
    new_index[order[k]] = k;
    out.AddOp(g.op(order[k]));
  }
  // Edges in a shuffled order too; an op's inputs keep their relative order.
  std::vector<int32_t> ops(g.num_ops());
  std::iota(ops.begin(), ops.end(), 0);
  for (int32_t i = g.num_ops() - 1; i > 0; --i) std::swap(ops[i], ops[random.Below(i + 1)]);
  for (int32_t op : ops) {
    for (int32_t e : g.in_data_edges(op)) {
      const DataEdge& edge = g.data_edges()[e];
      out.AddDataEdge(new_index[edge.src], edge.src_output, new_index[edge.dst]);
    }
  }
  std::vector<ControlEdge> control = g.control_edges();
  for (size_t i = control.size(); i > 1; --i) std::swap(control[i - 1], control[random.Below(i)]);
  for (const ControlEdge& e : control) out.AddControlEdge(new_index[e.src], new_index[e.dst]);
  out.Finalize("permuted");
  return out;
}

void ExpectSameResult(const SimResult& a, const SimResult& b, const std::string& what) {
  ASSERT_EQ(a.invalid, b.invalid) << what;
  EXPECT_EQ(a.oom, b.oom) << what;
  EXPECT_EQ(a.failed, b.failed) << what;
  EXPECT_EQ(a.step_time_us, b.step_time_us) << what;  // exactly: the same events in the same order
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t d = 0; d < a.devices.size(); ++d) {
    const DeviceStats& x = a.devices[d];
    const DeviceStats& y = b.devices[d];
    for (int p = 0; p < kNumPhases; ++p) EXPECT_EQ(x.compute_us[p], y.compute_us[p]) << what << " device " << d;
    EXPECT_EQ(x.copy_in_us, y.copy_in_us) << what << " device " << d;
    EXPECT_EQ(x.copy_out_us, y.copy_out_us) << what << " device " << d;
    EXPECT_EQ(x.bytes_in, y.bytes_in) << what << " device " << d;
    EXPECT_EQ(x.peak_memory_bytes, y.peak_memory_bytes) << what << " device " << d;
    EXPECT_EQ(x.oom, y.oom) << what << " device " << d;
  }
}

// Simulates `g` and `permutations` reorderings of it under the same
// placements (random ones, and `extra`), with and without noise, and
// expects identical results.
void ExpectFileOrderIsIrrelevant(const Graph& g, const Cluster& cluster, int permutations, uint64_t seed,
                                 std::vector<Placement> extra = {}) {
  CostModel cost(cluster);
  Simulator original(g, cluster, cost);
  Random random(seed);
  std::vector<Placement> placements = std::move(extra);
  for (int k = 0; k < 3; ++k) {
    Placement p(g.num_ops());
    for (int32_t op = 0; op < g.num_ops(); ++op) {
      do {
        p[op] = static_cast<int32_t>(random.Below(cluster.num_devices()));
      } while (!cost.CanRun(g.op(op), p[op]));
    }
    placements.push_back(std::move(p));
  }
  std::vector<SimOptions> runs(2);
  runs[1].noise.jitter = 0.3;
  runs[1].seed = seed;
  for (int k = 0; k < permutations; ++k) {
    std::vector<int32_t> order(g.num_ops());
    std::iota(order.begin(), order.end(), 0);
    if (k == 0) {
      std::reverse(order.begin(), order.end());
    } else {
      for (int32_t i = g.num_ops() - 1; i > 0; --i) std::swap(order[i], order[random.Below(i + 1)]);
    }
    Graph permuted = Permuted(g, order, random);
    Simulator other(permuted, cluster, cost);
    for (size_t pi = 0; pi < placements.size(); ++pi) {
      Placement moved(g.num_ops());
      for (int32_t i = 0; i < g.num_ops(); ++i) moved[i] = placements[pi][order[i]];
      for (size_t ri = 0; ri < runs.size(); ++ri) {
        ExpectSameResult(original.Run(placements[pi], runs[ri]), other.Run(moved, runs[ri]),
                         g.name + " permutation " + std::to_string(k) + " placement " + std::to_string(pi) +
                             (ri ? " (noisy)" : ""));
      }
    }
  }
}

// A random DAG full of ties: few distinct op times and sizes, several
// outputs, control edges, scratch and parameters; names unrelated to the
// order ops are added in.
Graph TieHeavyGraph(uint64_t seed, int32_t n) {
  Random random(seed);
  Graph g;
  g.name = "ties" + std::to_string(seed);
  for (int32_t i = 0; i < n; ++i) {
    Op op = MakeOp(i, "op" + std::to_string(random.Below(1000)) + "_" + std::to_string(i),
                   1e6 * static_cast<double>(1 + random.Below(2)), 1000 * static_cast<int64_t>(random.Below(3)));
    if (random.Below(3) == 0) op.outputs.push_back(op.outputs[0]);
    if (random.Below(4) == 0) op.temporary_bytes = 500;
    if (random.Below(5) == 0) op.persistent_bytes = 2000;
    g.AddOp(std::move(op));
    if (i == 0) continue;
    const int inputs = static_cast<int>(random.Below(3));
    for (int k = 0; k < inputs; ++k) {
      const int32_t src = static_cast<int32_t>(random.Below(i));
      g.AddDataEdge(src, static_cast<int32_t>(random.Below(g.op(src).outputs.size())), i);
    }
    if (random.Below(6) == 0) g.AddControlEdge(static_cast<int32_t>(random.Below(i)), i);
  }
  g.Finalize("ties");
  return g;
}

TEST(SimulatorTest, PermutingRandomGraphsWithTiesChangesNoResult) {
  Cluster staged_bus = MakeTestCluster(/*shared_bus=*/true, /*peer_link=*/false);
  staged_bus.devices[kGpu1].parallel_ops = 2;
  staged_bus.devices[kGpu0].memory_bytes = 6000;  // some placements run out
  staged_bus.Finalize("test");
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Graph g = TieHeavyGraph(seed, 12 + static_cast<int32_t>(seed) * 3);
    ExpectFileOrderIsIrrelevant(g, seed % 2 ? staged_bus : MakeTestCluster(), 4, seed);
  }
}

TEST(SimulatorTest, PermutingBuiltInModelsChangesNoResult) {
  Cluster k80 = *MakeClusterPreset("k80x4");
  for (const char* name : {"tiny", "transformer_xl2", "wavenet2x18"}) {
    Graph g = MakeModel(name);
    std::vector<Placement> expert;
    if (g.expert_stages > 0) expert.push_back(ExpertPlacement(g, k80));
    ExpectFileOrderIsIrrelevant(g, k80, 2, 5, expert);
  }
  Graph rnnlm = MakeModel("rnnlm", {{"layers", 2}, {"hidden", 64}, {"steps", 4}, {"batch", 4}, {"vocab", 100}});
  ExpectFileOrderIsIrrelevant(rnnlm, k80, 2, 6, {ExpertPlacement(rnnlm, k80)});
}

// --- The plain run and the general one ---

// A run without recorded events or noise takes the simulator's plain path
// (no checks for recording, noise or saturating byte counts); recording
// events takes the general one. Both must give the same step, bit for bit,
// out of memory and stopped at it included.
TEST(SimulatorTest, ThePlainPathAgreesWithTheGeneralOneBitForBit) {
  for (const char* cluster_name : {"k80x4", "p100x4"}) {
    for (int64_t batch : {64, 8192}) {  // the second runs out of memory on some devices
      SyntheticOptions options;
      options.num_ops = 1500;
      options.width = 8;
      options.batch = batch;
      const Graph graph = MakeSyntheticGraph(options);
      const Cluster cluster = *MakeClusterPreset(cluster_name);
      const CostModel cost(cluster);
      Simulator sim(graph, cluster, cost);
      const Grouping grouping = BuildGrouping(graph);
      Random random(17);
      for (int k = 0; k < 6; ++k) {
        std::vector<int32_t> device_of_group(grouping.num_groups());
        for (int32_t g = 0; g < grouping.num_groups(); ++g) {
          do {
            device_of_group[g] = static_cast<int32_t>(random.Below(cluster.num_devices()));
          } while (!(grouping.groups[g].device_kinds & MaskOf(cluster.devices[device_of_group[g]].kind)));
        }
        const Placement placement = ExpandGroupPlacement(grouping, device_of_group);
        for (bool stop_at_oom : {false, true}) {
          SCOPED_TRACE(std::string(cluster_name) + " batch " + std::to_string(batch) + " placement " + std::to_string(k) +
                       (stop_at_oom ? " stop at oom" : ""));
          SimOptions plain;
          plain.stop_at_oom = stop_at_oom;
          SimOptions general = plain;
          general.record_events = true;
          const SimResult a = sim.Run(placement, plain);
          const SimResult b = sim.Run(placement, general);
          EXPECT_EQ(a.step_time_us, b.step_time_us);
          EXPECT_EQ(a.oom, b.oom);
          EXPECT_EQ(a.reason, b.reason);
          ASSERT_EQ(a.devices.size(), b.devices.size());
          for (size_t d = 0; d < a.devices.size(); ++d) {
            for (int p = 0; p < kNumPhases; ++p) EXPECT_EQ(a.devices[d].compute_us[p], b.devices[d].compute_us[p]);
            EXPECT_EQ(a.devices[d].copy_in_us, b.devices[d].copy_in_us);
            EXPECT_EQ(a.devices[d].copy_out_us, b.devices[d].copy_out_us);
            EXPECT_EQ(a.devices[d].bytes_in, b.devices[d].bytes_in);
            EXPECT_EQ(a.devices[d].bytes_out, b.devices[d].bytes_out);
            EXPECT_EQ(a.devices[d].persistent_bytes, b.devices[d].persistent_bytes);
            EXPECT_EQ(a.devices[d].peak_memory_bytes, b.devices[d].peak_memory_bytes);
            EXPECT_EQ(a.devices[d].oom, b.devices[d].oom);
          }
          // The recorded memory events reach each device's peak.
          for (size_t d = 0; d < b.devices.size(); ++d) {
            int64_t highest = 0;
            for (const MemoryEvent& e : b.memory_events) {
              if (e.device == static_cast<int32_t>(d)) highest = std::max(highest, e.bytes_in_use);
            }
            EXPECT_EQ(highest, b.devices[d].peak_memory_bytes) << "device " << d;
          }
        }
      }
    }
  }
}

// --- Byte counts ---

TEST(SimulatorTest, ByteCountsSaturateInsteadOfWrapping) {
  EXPECT_EQ(SaturatingAddBytes(kSaturatedBytes - 1, 2), kSaturatedBytes);
  EXPECT_EQ(SaturatingAddBytes(kSaturatedBytes, kSaturatedBytes), kSaturatedBytes);
  EXPECT_EQ(SaturatingAddBytes(5, -3), 2);
}

TEST(SimulatorTest, TwoHugeParametersDoNotFitWhereEitherWould) {
  // Two parameters of 2^58 bytes each (the graph's total stays within what
  // Finalize accepts) on a device with one byte less than both need.
  const int64_t parameter = int64_t{1} << 58;
  Graph g = TwoBranches();
  g.mutable_op(0).persistent_bytes = parameter;
  g.mutable_op(2).persistent_bytes = parameter;
  Cluster c = MakeTestCluster();
  c.devices[kGpu0].memory_bytes = 2 * parameter;
  c.devices[kGpu0].reserved_bytes = 1;
  c.devices[kGpu1].memory_bytes = 2 * parameter;
  c.Finalize("huge");
  Fixture f(std::move(g), c);
  SimResult both = f.Run({kGpu0, kGpu0, kGpu0, kGpu0});
  EXPECT_TRUE(both.oom);
  EXPECT_EQ(both.devices[kGpu0].persistent_bytes, 2 * parameter);
  EXPECT_GE(both.devices[kGpu0].peak_memory_bytes, 2 * parameter);
  EXPECT_FALSE(f.Run({kGpu0, kGpu0, kGpu1, kGpu1}).oom);
}

TEST(SimulatorTest, OutOfMemoryIsAgainstCapacityMinusReserved) {
  Graph g = Chain();  // peak 100 + 200, then 200 + 300 = 500 bytes
  Cluster c = MakeTestCluster();
  c.devices[kGpu0].memory_bytes = 600;
  c.devices[kGpu0].reserved_bytes = 100;  // 500 usable: fits exactly
  c.devices[kGpu1].memory_bytes = 600;
  c.devices[kGpu1].reserved_bytes = 101;  // 499 usable: does not
  c.Finalize("reserved");
  Fixture f(std::move(g), c);
  EXPECT_FALSE(f.Run({kGpu0, kGpu0, kGpu0}).oom);
  EXPECT_TRUE(f.Run({kGpu1, kGpu1, kGpu1}).oom);
}

// --- simulate --steps N: the protocol's mean is the step time ---

TEST(SimulatorTest, WithSeveralStepsTheProtocolsMeanIsTheStepTime) {
  Fixture f(TwoBranches(), MakeTestCluster());
  Placement p = {kGpu0, kGpu0, kGpu1, kGpu1};
  SimOptions one;
  one.noise.jitter = 0.2;
  one.seed = 3;
  SimResult step = f.Run(p, one);
  MeasureOptions m;
  m.steps = 6;
  m.noise = one.noise;
  m.seed = 3;
  Measurement protocol = MeasureStepTime(*f.sim, p, m);
  ASSERT_TRUE(protocol.ok);
  ASSERT_NE(protocol.mean_step_time_us, step.step_time_us);  // the two differ, so the test can tell them apart

  nlohmann::json json = SimulateToJson(f.cluster, step, &protocol, 6);
  EXPECT_DOUBLE_EQ(json["step_time_s"].get<double>(), protocol.mean_step_time_us * 1e-6);
  EXPECT_DOUBLE_EQ(json["single_step_time_s"].get<double>(), step.step_time_s());
  EXPECT_EQ(json["measured_steps"].get<int>(), 6);
  EXPECT_EQ(json["steps_averaged"].get<int>(), 5);
  EXPECT_FALSE(json.contains("mean_step_time_s"));
  char expected[64];
  std::snprintf(expected, sizeof expected, "step time: %.6f s", protocol.mean_step_time_us * 1e-6);
  const std::string text = FormatSimulateText(f.cluster, step, &protocol, 6);
  EXPECT_EQ(text.rfind(expected, 0), 0u) << text;
  std::snprintf(expected, sizeof expected, "one step: %.6f s", step.step_time_s());
  EXPECT_NE(text.find(expected), std::string::npos) << text;

  // One step: that step is the step time, and nothing else is claimed.
  nlohmann::json single = SimulateToJson(f.cluster, step, nullptr, 1);
  EXPECT_DOUBLE_EQ(single["step_time_s"].get<double>(), step.step_time_s());
  EXPECT_FALSE(single.contains("single_step_time_s"));

  // A failed protocol has no step time.
  Measurement failed = protocol;
  failed.ok = false;
  failed.last.reason = "sporadic failure (noise model)";
  EXPECT_TRUE(SimulateToJson(f.cluster, step, &failed, 6)["step_time_s"].is_null());
  EXPECT_NE(FormatSimulateText(f.cluster, step, &failed, 6).find("step time: none"), std::string::npos);
}

}  // namespace
}  // namespace devplace

namespace devplace {
namespace {

// Two CPU devices; with `own_cores`, each owns a core of the machine, as
// `clusters --detect` writes them.
Cluster TwoCpuDevices(bool own_cores) {
  Cluster c;
  c.name = "host";
  c.devices = {testing::MakeDevice("cpu:0", DeviceKind::kCpu), testing::MakeDevice("cpu:1", DeviceKind::kCpu)};
  if (own_cores) {
    c.devices[0].cores = {0};
    c.devices[1].cores = {1};
  }
  c.links.push_back({0, 1, 1e9, 0.5, -1});
  c.Finalize("test cluster");
  return c;
}

SimResult RunWithContention(const Cluster& cluster, double contention, const Placement& placement) {
  Graph graph = TwoBranches();
  graph.Finalize("test graph");
  OpTimeTable table;
  table.set_host_contention(contention);
  const CostModel cost(cluster, table, PerfectEfficiency());
  Simulator sim(graph, cluster, cost);
  return sim.Run(placement);
}

// An op on a host device starts slower by the contention for each other
// host device busy at that instant: x1 alone 1 us, y1 beside it 1.5 us,
// x2 and y2 each beside the other's branch 1.5 us.
TEST(SimulatorTest, HostContentionSlowsOpsWhileTheOtherHostDeviceComputes) {
  const Placement split = {0, 0, 1, 1};
  EXPECT_DOUBLE_EQ(RunWithContention(TwoCpuDevices(true), 0, split).step_time_us, 2.0);
  SimResult contended = RunWithContention(TwoCpuDevices(true), 0.5, split);
  ASSERT_TRUE(contended.ok()) << contended.reason;
  EXPECT_DOUBLE_EQ(contended.step_time_us, 3.0);
  EXPECT_DOUBLE_EQ(contended.devices[0].compute_total_us() + contended.devices[1].compute_total_us(), 5.5);
  // Alone, a device is not contended; nor are devices that own no cores
  // (the presets': their "CPU" is not this machine's).
  EXPECT_DOUBLE_EQ(RunWithContention(TwoCpuDevices(true), 0.5, {0, 0, 0, 0}).step_time_us, 4.0);
  EXPECT_DOUBLE_EQ(RunWithContention(TwoCpuDevices(false), 0.5, split).step_time_us, 2.0);
}

// a (1 us, cpu:0) sends 4 bytes to b on cpu:1, where c (10 us) is running.
// On this machine's devices the receiver's core does the copy: it waits
// for c, then b waits for it (10 + 0.504 + 1 us). Where devices own no
// cores (the presets') or the model is off, the copy runs on its link while
// c computes, and b starts as c ends (11 us).
TEST(SimulatorTest, CopiesIntoAHostDeviceWaitForItsCore) {
  auto run = [](bool own_cores, bool model_on) {
    Graph graph;
    const int32_t a = graph.AddOp(MakeOp(0, "a", 1e6, 4));
    const int32_t b = graph.AddOp(MakeOp(1, "b", 1e6, 4));
    graph.AddOp(MakeOp(2, "c", 1e7, 4));
    graph.AddDataEdge(a, 0, b);
    graph.Finalize("test graph");
    const Cluster cluster = TwoCpuDevices(own_cores);
    const CostModel cost(cluster, OpTimeTable{}, PerfectEfficiency());
    Simulator sim(graph, cluster, cost);
    sim.set_copies_use_host_cores(model_on);
    SimOptions options;
    options.record_events = true;
    return sim.Run({0, 1, 1}, options);
  };
  const SimResult waited = run(true, true);
  ASSERT_TRUE(waited.ok()) << waited.reason;
  EXPECT_DOUBLE_EQ(waited.step_time_us, 11.504);
  ASSERT_EQ(waited.transfer_events.size(), 1u);
  EXPECT_DOUBLE_EQ(waited.transfer_events[0].start_us, 10.0);
  EXPECT_DOUBLE_EQ(run(false, true).step_time_us, 11.0);
  EXPECT_DOUBLE_EQ(run(true, false).step_time_us, 11.0);
}

// a (1 us, cpu:0) sends 4 bytes to b (1 us, cpu:1). cpu:1 has been idle
// since the step began when a ends at 1 us. If it wakes 3 us late after
// 0.5 us idle, its core starts the copy at 4 us (4.504), and b follows the
// copy at once (the core is awake): 5.504 us. After 2 us idle, it does not
// wake late: 2.504 us. Where its core does not do the copy (the copy runs
// on the link), b itself starts late: 5.504 us again.
TEST(SimulatorTest, AnIdleDeviceStartsLateByItsWakeUp) {
  auto run = [](double after_idle_us, bool own_cores) {
    Graph graph;
    const int32_t a = graph.AddOp(MakeOp(0, "a", 1e6, 4));
    const int32_t b = graph.AddOp(MakeOp(1, "b", 1e6, 4));
    graph.AddDataEdge(a, 0, b);
    graph.Finalize("test graph");
    Cluster cluster = TwoCpuDevices(own_cores);
    for (Device& d : cluster.devices) {
      d.wake_up_us = 3;
      d.wake_up_after_idle_us = after_idle_us;
    }
    cluster.Finalize("test cluster");
    const CostModel cost(cluster, OpTimeTable{}, PerfectEfficiency());
    Simulator sim(graph, cluster, cost);
    SimOptions options;
    options.record_events = true;
    SimResult recorded = sim.Run({0, 1}, options);
    EXPECT_EQ(sim.Run({0, 1}).step_time_us, recorded.step_time_us);  // the run a search makes agrees
    return recorded;
  };
  const SimResult woken = run(0.5, true);
  ASSERT_TRUE(woken.ok()) << woken.reason;
  EXPECT_DOUBLE_EQ(woken.step_time_us, 5.504);
  ASSERT_EQ(woken.transfer_events.size(), 1u);
  EXPECT_DOUBLE_EQ(woken.transfer_events[0].start_us, 4.0);
  ASSERT_EQ(woken.op_events.size(), 2u);
  EXPECT_DOUBLE_EQ(woken.op_events[0].start_us, 0.0);  // cpu:0 starts the step: not idle yet
  EXPECT_DOUBLE_EQ(woken.op_events[1].start_us, 4.504);
  EXPECT_DOUBLE_EQ(run(2, true).step_time_us, 2.504);
  const SimResult on_link = run(0.5, false);
  EXPECT_DOUBLE_EQ(on_link.step_time_us, 5.504);
  ASSERT_EQ(on_link.op_events.size(), 2u);
  EXPECT_DOUBLE_EQ(on_link.op_events[1].start_us, 4.504);
}

// Five cases where the simulator and docs/simulator.md once disagreed
// (tests/data/sim_vs_docs/<case>: graph, cluster, op times, a placement,
// and expected.json: the step time and peaks the docs give, with the
// reasoning and the decision in its note). Runs the case recorded and as a
// search would, checks both against expected.json, and returns the
// recorded run for the case's own checks.
struct DocsCase {
  Graph graph;
  Cluster cluster;
  SimResult run;
};

DocsCase RunDocsCase(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(DEVPLACE_TEST_DATA) / "sim_vs_docs" / name;
  DocsCase c{LoadGraphFile((dir / "graph.json").string()), LoadClusterFile((dir / "cluster.json").string()), {}};
  const CostModel cost(c.cluster, OpTimeTable::Load((dir / "optimes.json").string()));
  Placement placement;
  if (std::filesystem::exists(dir / "placement.json")) {
    placement = LoadPlacementFile((dir / "placement.json").string(), c.graph, c.cluster);
  } else {
    std::string spec = testing::ReadFile((dir / "placement.txt").string());
    while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.back()))) spec.pop_back();
    placement = ResolvePlacement(spec, c.graph, c.cluster);
  }
  Simulator sim(c.graph, c.cluster, cost);
  SimOptions recorded;
  recorded.record_events = true;
  c.run = sim.Run(placement, recorded);
  EXPECT_TRUE(c.run.ok()) << c.run.reason;
  EXPECT_EQ(sim.Run(placement).step_time_us, c.run.step_time_us);
  const nlohmann::json expected = nlohmann::json::parse(testing::ReadFile((dir / "expected.json").string()))["expected"];
  EXPECT_NEAR(c.run.step_time_s(), expected["step_time_s"].get<double>(), 1e-12) << name;
  if (expected.contains("peak")) {
    for (const auto& [device, bytes] : expected["peak"].items()) {
      const int32_t d = c.cluster.FindDevice(device);
      EXPECT_GE(d, 0) << device;
      if (d >= 0) EXPECT_EQ(c.run.devices[d].peak_memory_bytes, bytes.get<int64_t>()) << name << " on " << device;
    }
  }
  return c;
}

// The op event of the op named `name`.
OpEvent EventOf(const DocsCase& c, const std::string& name) {
  for (const OpEvent& e : c.run.op_events) {
    if (c.graph.op(e.op).name == name) return e;
  }
  ADD_FAILURE() << "no event for " << name;
  return {};
}

TEST(SimulatorDocsTest, EqualRoutesTieOnTheirDevicesNotOnTheWidthBeforeTheLastHop) {
  const DocsCase c = RunDocsCase("route_tie_prefix_width");
  std::vector<int32_t> through;
  for (const TransferEvent& e : c.run.transfer_events) through.push_back(e.to_device);
  EXPECT_EQ(through, (std::vector<int32_t>{c.cluster.FindDevice("gpu:2"), c.cluster.FindDevice("gpu:4"),
                                           c.cluster.FindDevice("gpu:1")}));
}

TEST(SimulatorDocsTest, NothingWakesLateAtTheStepsStartEvenWithAZeroIdleThreshold) {
  const DocsCase c = RunDocsCase("wake_up_zero_threshold_at_start");
  EXPECT_EQ(EventOf(c, "b").start_us, 0);
}

TEST(SimulatorDocsTest, AWokenOpAllocatesWhenItStartsNotWhenItTakesTheSlot) {
  const DocsCase c = RunDocsCase("wake_up_memory_at_start");
  EXPECT_EQ(EventOf(c, "q").start_us, 80);
}

TEST(SimulatorDocsTest, ADeviceWakingForItsWorkSlowsNoOtherHostDevice) {
  const DocsCase c = RunDocsCase("wake_up_contention_waking_device");
  const OpEvent z = EventOf(c, "z");
  EXPECT_EQ(z.start_us, 30);
  EXPECT_EQ(z.end_us, 130);  // alone: 1x
  const OpEvent y = EventOf(c, "y");
  EXPECT_EQ(y.start_us, 70);
  EXPECT_EQ(y.end_us, 90);  // started while z computes: 2x
}

TEST(SimulatorDocsTest, CopiesJoiningAHostCoreAtOneInstantGoInTheSendsOrder) {
  const DocsCase c = RunDocsCase("host_copy_two_channels_same_instant");
  EXPECT_EQ(EventOf(c, "c1").start_us, 12);
  EXPECT_EQ(EventOf(c, "c2").start_us, 13);
}

// A wake-up holds every op the device takes meanwhile: with two slots, the
// op taken during the first's wake-up starts when the same wake-up ends.
TEST(SimulatorDocsTest, WhatAWakingDeviceTakesWaitsForTheSameWakeUp) {
  Graph graph;
  const int32_t a = graph.AddOp(MakeOp(0, "a", 1e6, 4));    // 1 us on cpu:0
  const int32_t b = graph.AddOp(MakeOp(1, "b", 2e6, 4));    // 2 us on cpu:1, reads a
  const int32_t x = graph.AddOp(MakeOp(2, "x", 10e6, 4));   // 10 us on cpu:0
  const int32_t c = graph.AddOp(MakeOp(3, "c", 1e6, 4));    // 1 us on cpu:1, reads x
  graph.AddDataEdge(a, 0, b);
  graph.AddDataEdge(x, 0, c);
  graph.Finalize("test graph");
  Cluster cluster;
  cluster.name = "two";
  cluster.devices = {testing::MakeDevice("cpu:0", DeviceKind::kCpu), testing::MakeDevice("cpu:1", DeviceKind::kCpu)};
  cluster.devices[1].parallel_ops = 2;
  cluster.devices[1].wake_up_us = 20;
  cluster.devices[1].wake_up_after_idle_us = 0.5;
  cluster.links = {{0, 1, 1e12, 0, -1}};
  cluster.Finalize("two devices");
  const CostModel cost(cluster, OpTimeTable{}, PerfectEfficiency());
  Simulator sim(graph, cluster, cost);
  SimOptions recorded;
  recorded.record_events = true;
  // cpu:0 runs a (0..1) then x (1..11); b is ready on cpu:1 at 1 (woken at
  // 21), c at 11, while cpu:1 still wakes: it starts at 21 too.
  const SimResult r = sim.Run({0, 1, 0, 1}, recorded);
  ASSERT_TRUE(r.ok()) << r.reason;
  std::map<std::string, double> start_us;
  for (const OpEvent& e : r.op_events) start_us[graph.op(e.op).name] = e.start_us;
  EXPECT_NEAR(start_us["b"], 21, 1e-3);
  EXPECT_NEAR(start_us["c"], 21, 1e-3);
  EXPECT_EQ(sim.Run({0, 1, 0, 1}).step_time_us, r.step_time_us);
}

}  // namespace
}  // namespace devplace
