#include <gtest/gtest.h>

#include <cmath>

#include "cluster/presets.h"
#include "models/synthetic.h"
#include "placers/methods.h"
#include "placers/partition_input.h"
#include "placers/placer.h"
#include "placers/search_cost.h"
#include "report/compare_table.h"
#include "sim/lower_bound.h"
#include "test_util.h"
#include "util/error.h"
#include "util/random.h"

namespace devplace {
namespace {

using testing::MakeDevice;
using testing::MakeOp;

// cpu:0 ten times slower than gpu:0 and gpu:1; PCIe-like links.

// Runs a placer on a graph and cluster, with the perfect-efficiency cost model.
struct Harness {
  Graph graph;
  Cluster cluster;
  CostModel cost;
  Simulator simulator;
  Harness(Graph g, Cluster c)
      : graph((g.Finalize("test"), std::move(g))),
        cluster(std::move(c)),
        cost(cluster, {}, testing::PerfectEfficiency()),
        simulator(graph, cluster, cost) {}
  PlacerOutput Place(const std::string& method, uint64_t seed = 0) {
    PlacementProblem problem{graph, cluster, cost, simulator, seed};
    return FindPlacer(method).place(problem);
  }
};

// Two independent chains of three 10 ms ops each, passing small tensors.
Graph TwoHeavyBranches() {
  Graph g;
  int64_t id = 0;
  for (const char* branch : {"a", "b"}) {
    int32_t prev = -1;
    for (int i = 0; i < 3; ++i) {
      int32_t op = g.AddOp(MakeOp(id++, std::string(branch) + std::to_string(i), 1e10, 1000));
      if (prev >= 0) g.AddDataEdge(prev, 0, op);
      prev = op;
    }
  }
  return g;
}

class TwoBranchesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TwoBranchesTest, HeavyIndependentBranchesGoToTwoGpus) {
  Harness h(TwoHeavyBranches(), testing::MakeSlowCpuCluster());
  PlacerOutput out = h.Place(GetParam());
  ASSERT_EQ(out.placement.size(), 6u);
  const Placement& p = out.placement;
  EXPECT_EQ(p[0], p[1]);
  EXPECT_EQ(p[1], p[2]);
  EXPECT_EQ(p[3], p[4]);
  EXPECT_EQ(p[4], p[5]);
  EXPECT_NE(p[0], p[3]);
  EXPECT_NE(h.cluster.devices[p[0]].kind, DeviceKind::kCpu);
  EXPECT_NE(h.cluster.devices[p[3]].kind, DeviceKind::kCpu);
  SimResult r = h.simulator.Run(p);
  EXPECT_NEAR(r.step_time_us, 30'000, 100);  // both chains at once
}

INSTANTIATE_TEST_SUITE_P(Placers, TwoBranchesTest,
                         ::testing::Values("scotch", "mincut", "metis", "m_topo", "m_etf", "m_sct"));

// A 1.5 GB variable no 1 GB GPU can hold, feeding a small consumer.
Graph OversizedOp() {
  Graph g;
  Op big = MakeOp(0, "huge_embedding", 1e6, 4000);
  big.persistent_bytes = 1'500'000'000;
  int32_t a = g.AddOp(big);
  int32_t b = g.AddOp(MakeOp(1, "small", 1e9, 4000));
  int32_t c = g.AddOp(MakeOp(2, "other", 1e9, 4000));
  g.AddDataEdge(a, 0, b);
  g.AddDataEdge(b, 0, c);
  return g;
}

class OversizedTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OversizedTest, OpTooBigForAnyGpuGoesToTheCpu) {
  Harness h(OversizedOp(), testing::MakeSlowCpuCluster());
  PlacerOutput out = h.Place(GetParam());
  EXPECT_EQ(h.cluster.devices[out.placement[0]].kind, DeviceKind::kCpu) << GetParam();
  SimResult r = h.simulator.Run(out.placement);
  EXPECT_TRUE(r.ok()) << r.reason;
  EXPECT_TRUE(out.note.empty()) << out.note;
}

INSTANTIATE_TEST_SUITE_P(Placers, OversizedTest,
                         ::testing::Values("scotch", "mincut", "metis", "m_topo", "m_etf", "m_sct"));

// Every registered placer's name.
std::vector<std::string> AllPlacerNames();

// Two GPUs and no CPU.
Cluster GpuOnlyCluster() {
  Cluster c;
  c.name = "gpu_only";
  c.devices = {MakeDevice("gpu:0", DeviceKind::kGpu), MakeDevice("gpu:1", DeviceKind::kGpu)};
  c.links = {{0, 1, 1e9, 10, -1}};
  c.Finalize("gpu-only cluster");
  return c;
}

// Two CPUs and no GPU.
Cluster CpuOnlyCluster() {
  Cluster c;
  c.name = "cpu_only";
  c.devices = {MakeDevice("cpu:0", DeviceKind::kCpu), MakeDevice("cpu:1", DeviceKind::kCpu)};
  c.links = {{0, 1, 1e9, 10, -1}};
  c.Finalize("cpu-only cluster");
  return c;
}

// TwoHeavyBranches with one more op, `only` of kind `kind`, feeding a0.
Graph WithOpOnlyFor(DeviceKind kind, const std::string& only) {
  Graph g = TwoHeavyBranches();
  Op op = MakeOp(100, only, 1e6, 1000);
  op.device_kinds = MaskOf(kind);
  int32_t index = g.AddOp(op);
  g.AddDataEdge(index, 0, /*a0=*/0);
  return g;
}

class ClusterKindsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ClusterKindsTest, OpNoDeviceCanRunIsAnErrorNamingOpKindsAndCluster) {
  struct Case {
    DeviceKind only;
    Cluster cluster;
  };
  for (Case& c : std::vector<Case>{{DeviceKind::kCpu, GpuOnlyCluster()}, {DeviceKind::kGpu, CpuOnlyCluster()}}) {
    Harness h(WithOpOnlyFor(c.only, "input_pipeline"), c.cluster);
    try {
      h.Place(GetParam());
      ADD_FAILURE() << GetParam() << " placed an op no device of " << h.cluster.name << " can run";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("'input_pipeline'"), std::string::npos) << message;
      EXPECT_NE(message.find(std::string("only on ") + DeviceKindName(c.only)), std::string::npos) << message;
      EXPECT_NE(message.find("'" + h.cluster.name + "'"), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

TEST_P(ClusterKindsTest, ClustersOfOneKindGetCompleteValidPlacements) {
  for (Cluster cluster : {GpuOnlyCluster(), CpuOnlyCluster()}) {
    SyntheticOptions options;
    options.num_ops = 120;
    Graph g = MakeSyntheticGraph(options);
    // The synthetic graph's CPU-only ops may go anywhere here.
    for (int32_t op = 0; op < g.num_ops(); ++op) g.mutable_op(op).device_kinds = kAllDeviceKinds;
    g.Finalize("synthetic");
    CostModel cost(cluster);
    Simulator simulator(g, cluster, cost);
    PlacementProblem problem{g, cluster, cost, simulator, 5};
    PlacerOutput out = FindPlacer(GetParam()).place(problem);
    ASSERT_EQ(out.placement.size(), static_cast<size_t>(g.num_ops()));
    auto problem_text = CheckPlacement(g, cluster, out.placement);
    EXPECT_FALSE(problem_text.has_value()) << cluster.name << ": " << *problem_text;
    SimResult r = simulator.Run(out.placement);
    EXPECT_FALSE(r.invalid) << cluster.name << ": " << r.reason;
  }
}

INSTANTIATE_TEST_SUITE_P(Placers, ClusterKindsTest, ::testing::ValuesIn(AllPlacerNames()));

// Checks that `method` placed every op of `h.graph` on a device that can
// run it, kept co-location, and that the placement simulates.
void ExpectCompleteValidPlacement(Harness& h, const std::string& method, uint64_t seed, const std::string& what) {
  PlacerOutput out = h.Place(method, seed);
  ASSERT_EQ(out.placement.size(), static_cast<size_t>(h.graph.num_ops())) << method << " " << what;
  for (int32_t op = 0; op < h.graph.num_ops(); ++op) {
    ASSERT_GE(out.placement[op], 0) << method << " " << what << ": op " << h.graph.op(op).name << " on no device";
    ASSERT_LT(out.placement[op], h.cluster.num_devices()) << method << " " << what;
  }
  auto problem_text = CheckPlacement(h.graph, h.cluster, out.placement);
  EXPECT_FALSE(problem_text.has_value()) << method << " " << what << ": " << *problem_text;
  SimResult r = h.simulator.Run(out.placement);
  EXPECT_FALSE(r.invalid) << method << " " << what << ": " << r.reason;
}

class ReadinessTest : public ::testing::TestWithParam<std::string> {};

// A variable shares a co-location group with its update further on, and
// has a control edge to the op that reads it: the list schedulers defer the
// variable, and once left the reader and all after it unreleased.
TEST_P(ReadinessTest, ControlEdgeFromAGroupedSourceReleasesItsSuccessors) {
  Graph g;
  int32_t x = g.AddOp(MakeOp(0, "x", 1e6, 1000));
  Op var = MakeOp(1, "var", 0, 4000);
  var.persistent_bytes = 4000;
  var.outputs[0].aliases_persistent = true;
  var.colocation_group = "layer";
  int32_t v = g.AddOp(var);
  int32_t a = g.AddOp(MakeOp(2, "a", 1e9, 1000));
  int32_t b = g.AddOp(MakeOp(3, "b", 1e9, 1000));
  Op update = MakeOp(4, "update", 1e6, 4);
  update.colocation_group = "layer";
  int32_t u = g.AddOp(update);
  int32_t c = g.AddOp(MakeOp(5, "c", 1e9, 1000));
  g.AddDataEdge(x, 0, a);
  g.AddControlEdge(v, a);
  g.AddDataEdge(a, 0, b);
  g.AddDataEdge(v, 0, b);
  g.AddDataEdge(b, 0, u);
  g.AddDataEdge(b, 0, c);
  Harness h(std::move(g), testing::MakeSlowCpuCluster());
  ExpectCompleteValidPlacement(h, GetParam(), 0, "grouped source with a control edge");
}

// Small random graphs with data and control edges, co-location groups
// (their sources included) and CPU-only ops: every op placed, validly.
TEST_P(ReadinessTest, RandomGraphsWithControlEdgesAndGroupsArePlacedCompletely) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    Random random(seed);
    Graph g;
    const int n = 2 + static_cast<int>(random.Below(18));
    for (int i = 0; i < n; ++i) {
      Op op = MakeOp(i, "op" + std::to_string(i), 1e6 * (1 + random.Below(1000)), 1000 * (1 + random.Below(1000)));
      if (random.Below(4) == 0) op.persistent_bytes = 1000 * random.Below(200000);
      if (random.Below(8) == 0) op.device_kinds = MaskOf(DeviceKind::kCpu);
      if (random.Below(3) == 0) op.colocation_group = "group" + std::to_string(random.Below(3));
      g.AddOp(op);
      if (i == 0) continue;
      for (uint64_t k = random.Below(3); k > 0; --k) g.AddDataEdge(static_cast<int32_t>(random.Below(i)), 0, i);
      if (random.Below(3) == 0) g.AddControlEdge(static_cast<int32_t>(random.Below(i)), i);
    }
    // Small GPUs in every other case, so that memory limits bite too.
    Harness h(std::move(g), testing::MakeSlowCpuCluster(seed % 2 ? 60'000'000 : 1'000'000'000));
    ExpectCompleteValidPlacement(h, GetParam(), seed, "random graph " + std::to_string(seed));
  }
}

INSTANTIATE_TEST_SUITE_P(Placers, ReadinessTest, ::testing::ValuesIn(AllPlacerNames()));

// A chain of 12 layers of 100 MB parameters each: 1.2 GB, more than either
// 1 GB GPU holds. Merged whole, the list schedulers could only put it on the
// CPU; bounded by the GPUs' memory, its groups go to the GPUs.
Graph HeavyChain() {
  Graph g;
  int32_t prev = -1;
  for (int i = 0; i < 12; ++i) {
    Op op = MakeOp(i, "layer" + std::to_string(i), 1e9, 10'000'000);
    op.persistent_bytes = 100'000'000;
    int32_t next = g.AddOp(op);
    if (prev >= 0) g.AddDataEdge(prev, 0, next);
    prev = next;
  }
  return g;
}

TEST(PlacersTest, ListSchedulersPutAChainTooBigForOneGpuOnTheGpus) {
  Harness h(HeavyChain(), testing::MakeSlowCpuCluster());
  for (const char* method : {"m_topo", "m_etf", "m_sct"}) {
    PlacerOutput out = h.Place(method);
    for (int32_t op = 0; op < h.graph.num_ops(); ++op) {
      EXPECT_EQ(h.cluster.devices[out.placement[op]].kind, DeviceKind::kGpu) << method << " " << h.graph.op(op).name;
    }
    SimResult r = h.simulator.Run(out.placement);
    EXPECT_TRUE(r.ok()) << method << ": " << r.reason;
  }
}

TEST(PlacersTest, GroupingBoundIsHalfTheSmallestUsableMemoryOfEachKind) {
  Cluster c = testing::MakeSlowCpuCluster();
  c.devices[2].reserved_bytes = 200'000'000;  // gpu:1: 800 MB usable
  GroupingOptions options = GroupingOptionsFor(c);
  EXPECT_EQ(options.max_group_bytes_of_kind[static_cast<int>(DeviceKind::kGpu)], 400'000'000);
  EXPECT_EQ(options.max_group_bytes_of_kind[static_cast<int>(DeviceKind::kCpu)], 50'000'000'000);
  EXPECT_EQ(options.MaxGroupBytes(kAllDeviceKinds), 400'000'000);
  // A kind the cluster lacks bounds nothing.
  EXPECT_EQ(GroupingOptionsFor(GpuOnlyCluster()).MaxGroupBytes(MaskOf(DeviceKind::kCpu)), kNoGroupBytesBound);
  // And the heavy chain, grouped for this cluster, splits under 400 MB.
  Graph g = HeavyChain();
  g.Finalize("chain");
  Grouping grouping = BuildGrouping(g, options);
  EXPECT_GE(grouping.num_groups(), 4);  // 1.32 GB in groups of at most 400 MB
  for (const Group& group : grouping.groups) EXPECT_LE(group.memory_bytes(), 400'000'000) << group.name;
}

TEST(CompareTableTest, WorkBoundSaysItDividesByOpSlots) {
  Harness h(TwoHeavyBranches(), testing::MakeSlowCpuCluster());
  h.cluster.devices[1].parallel_ops = 2;  // gpu:0 runs two ops at once: 4 slots on 3 devices
  Comparison comparison;
  comparison.graph_name = "branches";
  comparison.cluster_name = h.cluster.name;
  comparison.bound = StepTimeLowerBound(h.graph, h.cluster, h.cost);
  EXPECT_NEAR(comparison.bound.work_us, 60'000.0 / 4, 1);  // six 10 ms ops over 4 slots
  const std::string text = FormatComparisonText(h.cluster, comparison);
  EXPECT_NE(text.find("total work over 4 op slots on 3 devices 0.015000 s"), std::string::npos) << text;
}

TEST(PlacersTest, SingleDevicePlacersUseTheirDevice) {
  Harness h(OversizedOp(), testing::MakeSlowCpuCluster());
  EXPECT_EQ(h.Place("single_cpu").placement, (Placement{0, 0, 0}));
  Placement gpu = h.Place("single_gpu").placement;
  EXPECT_EQ(gpu, (Placement{1, 1, 1}));
  EXPECT_TRUE(h.simulator.Run(gpu).oom);  // as in Table 2: single GPU can run out of memory
}

// Devices of one kind can differ (a profile times two vCPUs of one VM
// apart): the single-device baselines take the fastest one that fits, and
// simulate nothing where the devices are alike.
TEST(PlacersTest, SingleDevicePlacersTakeTheFastestDeviceOfTheirKind) {
  const Placement on_gpu0(6, 1), on_gpu1(6, 2);
  {
    Harness h(TwoHeavyBranches(), testing::MakeSlowCpuCluster());
    PlacerOutput out = h.Place("single_gpu");
    EXPECT_EQ(out.placement, on_gpu0);
    EXPECT_EQ(out.evaluations, 0);
  }
  {
    Cluster c = testing::MakeSlowCpuCluster();
    c.devices[2].peak_flops_per_s *= 2;
    Harness h(TwoHeavyBranches(), c);
    PlacerOutput out = h.Place("single_gpu");
    EXPECT_EQ(out.placement, on_gpu1);
    EXPECT_EQ(out.evaluations, 2);
    EXPECT_EQ(out.note, "on gpu:1, the fastest gpu here for a one-device step");
  }
  {
    // Alike GPUs, but gpu:1's link to the CPU (where ops without a GPU
    // kernel would go) is slower: compared, and gpu:0 kept on the tie.
    Cluster c = testing::MakeSlowCpuCluster();
    c.links[1].bandwidth_bytes_per_s /= 2;
    Harness h(TwoHeavyBranches(), c);
    PlacerOutput out = h.Place("single_gpu");
    EXPECT_EQ(out.placement, on_gpu0);
    EXPECT_EQ(out.evaluations, 2);
    EXPECT_EQ(out.note, "");
  }
  {
    // The faster device is out of memory: the slower one that fits wins.
    Cluster c = testing::MakeSlowCpuCluster();
    c.devices[1].peak_flops_per_s *= 2;
    c.devices[1].memory_bytes = 100;
    Harness h(TwoHeavyBranches(), c);
    ASSERT_TRUE(h.simulator.Run(on_gpu0).oom);
    EXPECT_EQ(h.Place("single_gpu").placement, on_gpu1);
  }
  {
    // Equal specifications, but the profile timed gpu:1 faster.
    Graph g = TwoHeavyBranches();
    g.Finalize("test");
    Cluster c = testing::MakeSlowCpuCluster();
    OpTimeTable table;
    table.Add("MatMul", {250}, DeviceKind::kGpu, 5.0, std::nullopt, "gpu:1");
    CostModel cost(c, table, testing::PerfectEfficiency());
    Simulator simulator(g, c, cost);
    PlacementProblem problem{g, c, cost, simulator, 0};
    EXPECT_EQ(FindPlacer("single_gpu").place(problem).placement, on_gpu1);
    EXPECT_EQ(FindPlacer("single_cpu").place(problem).placement, Placement(6, 0));
  }
}

TEST(PlacersTest, WhenNothingFitsThePlacerSaysSo) {
  Harness h(OversizedOp(), testing::MakeSlowCpuCluster());
  h.cluster.devices[0].memory_bytes = 1'000'000'000;  // the CPU is too small too
  Simulator simulator(h.graph, h.cluster, h.cost);
  PlacementProblem problem{h.graph, h.cluster, h.cost, simulator, 0};
  for (const char* method : {"metis", "m_etf"}) {
    PlacerOutput out = FindPlacer(method).place(problem);
    EXPECT_NE(out.note.find("memory"), std::string::npos) << method << ": " << out.note;
  }
}

// Every placer on a graph with CPU-only ops and co-location groups.
class ValidityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ValidityTest, PlacementsAreValidAndRespectColocation) {
  SyntheticOptions options;
  options.num_ops = 400;
  options.width = 3;
  Graph g = MakeSyntheticGraph(options);
  Cluster c = *MakeClusterPreset("k80x4");
  CostModel cost(c);
  Simulator simulator(g, c, cost);
  PlacementProblem problem{g, c, cost, simulator, 3};
  PlacerOutput out = FindPlacer(GetParam()).place(problem);
  auto problem_text = CheckPlacement(g, c, out.placement);
  EXPECT_FALSE(problem_text.has_value()) << *problem_text;
  SimResult r = simulator.Run(out.placement);
  EXPECT_FALSE(r.invalid) << r.reason;
}

std::vector<std::string> AllPlacerNames() {
  std::vector<std::string> names;
  for (const PlacerInfo& p : ListPlacers()) names.push_back(p.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Placers, ValidityTest, ::testing::ValuesIn(AllPlacerNames()));

TEST(PlacersTest, ScotchMetisAndRandomAreDeterministicForASeed) {
  SyntheticOptions options;
  options.num_ops = 600;
  Graph g = MakeSyntheticGraph(options);
  Cluster c = *MakeClusterPreset("p100x4");
  CostModel cost(c);
  Simulator simulator(g, c, cost);
  for (const char* method : {"scotch", "mincut", "metis", "random"}) {
    PlacementProblem problem{g, c, cost, simulator, 11};
    Placement first = FindPlacer(method).place(problem).placement;
    Placement second = FindPlacer(method).place(problem).placement;
    EXPECT_EQ(first, second) << method;
  }
  PlacementProblem a{g, c, cost, simulator, 1};
  PlacementProblem b{g, c, cost, simulator, 2};
  EXPECT_NE(FindPlacer("random").place(a).placement, FindPlacer("random").place(b).placement);
}

TEST(PlacersTest, SingleDeviceClusterNeedsNoPartitioning) {
  Cluster c;
  c.devices = {MakeDevice("gpu:0", DeviceKind::kGpu)};
  c.Finalize();
  Harness h(TwoHeavyBranches(), c);
  for (const char* method : {"scotch", "mincut", "metis", "m_topo", "m_etf", "m_sct"}) {
    EXPECT_EQ(h.Place(method).placement, Placement(6, 0)) << method;
  }
}

TEST(PlacersTest, UnknownMethodIsAnErrorListingTheKnownOnes) {
  try {
    FindPlacer("magic");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("m_etf"), std::string::npos);
  }
}

// m-ETF and m-SCT look at every ready op at each step. On `width`
// independent ops all are ready at once and one is placed per step, so
// they look width + (width - 1) + ... + 1 times in all: they place the graph
// within that bound and refuse one below it.
TEST(ListSchedulersTest, EtfAndSctRefuseOncePastTheirBoundOnLooksAtReadyOps) {
  constexpr int width = 100;
  constexpr int64_t looks = int64_t{width} * (width + 1) / 2;
  Graph g;
  for (int i = 0; i < width; ++i) g.AddOp(MakeOp(i, "op" + std::to_string(i), 1e6, 1000));
  Harness h(std::move(g), testing::MakeSlowCpuCluster());
  PlacementProblem problem{h.graph, h.cluster, h.cost, h.simulator, 0};
  for (auto place : {static_cast<PlacerOutput (*)(const PlacementProblem&, int64_t)>(PlaceMEtf),
                     static_cast<PlacerOutput (*)(const PlacementProblem&, int64_t)>(PlaceMSct)}) {
    EXPECT_EQ(place(problem, looks).placement.size(), static_cast<size_t>(width));
    try {
      place(problem, looks - 1);
      ADD_FAILURE() << "no refusal below " << looks << " looks";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("100 ops with up to 100 ready at once"), std::string::npos) << message;
      EXPECT_NE(message.find("bound of 5049 looks with 99 ops placed"), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
  // The bound the registry uses is far above any graph this small.
  EXPECT_EQ(FindPlacer("m_etf").place(problem).placement.size(), static_cast<size_t>(width));
  EXPECT_GE(kMaxListScheduleLooks, int64_t{1'000'000'000});
}

// ---- How searches rank placements and choose a start (search_cost.h, issue 47) ----

// A simulated result by hand: each device's peak, out of memory if any
// peak passes its device's usable memory.
SimResult ResultWithPeaks(const Cluster& cluster, std::vector<int64_t> peaks, double step_time_us) {
  SimResult r;
  r.step_time_us = step_time_us;
  for (size_t d = 0; d < peaks.size(); ++d) {
    DeviceStats stats;
    stats.peak_memory_bytes = peaks[d];
    r.oom = r.oom || peaks[d] > cluster.devices[d].usable_memory_bytes();
    r.devices.push_back(stats);
  }
  return r;
}

TEST(SearchCostTest, AnyPlacementThatFitsBeatsAnyOutOfMemoryAndLessOverflowBeatsMore) {
  const Cluster c = testing::MakeSlowCpuCluster();  // GPUs of 1 GB
  const int64_t GB = 1'000'000'000;
  // Issue 47's order: single GPU at 0.3 s out of memory, m-ETF fitting at 1.4 s.
  const SearchCost fits_slow = SearchCostOf(ResultWithPeaks(c, {0, GB / 2, GB / 2}, 1.4e6), c);
  const SearchCost fits_fast = SearchCostOf(ResultWithPeaks(c, {0, GB, GB / 2}, 0.5e6), c);
  const SearchCost oom_fast = SearchCostOf(ResultWithPeaks(c, {0, GB + 1000, 0}, 0.3e6), c);
  const SearchCost oom_more = SearchCostOf(ResultWithPeaks(c, {0, GB + 600'000'000, 0}, 0.2e6), c);
  const SearchCost oom_spread = SearchCostOf(ResultWithPeaks(c, {0, GB + 300'000'000, GB + 300'000'000}, 0.1e6), c);
  EXPECT_TRUE(fits_slow.fits());
  EXPECT_FALSE(oom_fast.fits());
  EXPECT_DOUBLE_EQ(oom_fast.overflow_bytes, 1000);
  EXPECT_DOUBLE_EQ(oom_spread.overflow_bytes, 600'000'000);  // summed over devices
  EXPECT_DOUBLE_EQ(MemoryOverflowBytes(ResultWithPeaks(c, {0, GB, GB}, 1), c), 0);
  EXPECT_TRUE(Better(fits_slow, oom_fast));
  EXPECT_TRUE(Better(fits_slow, oom_more));
  EXPECT_FALSE(Better(oom_fast, fits_slow));
  EXPECT_TRUE(Better(fits_fast, fits_slow));  // both fit: step time
  EXPECT_TRUE(Better(oom_fast, oom_more));    // less overflow, however slower
  EXPECT_FALSE(Better(oom_more, oom_fast));
  EXPECT_FALSE(Better(oom_more, oom_spread));  // equal overflow: the faster
  EXPECT_TRUE(Better(oom_spread, oom_more));
  EXPECT_FALSE(Better(fits_slow, fits_slow));
  SimResult invalid;
  invalid.invalid = true;
  const SearchCost cannot_run = SearchCostOf(invalid, c);
  EXPECT_TRUE(Better(oom_more, cannot_run));
  EXPECT_FALSE(Better(cannot_run, cannot_run));
}

TEST(SearchCostTest, AcceptanceLeadsTowardFittingAndNeverOutOfIt) {
  const Cluster c = testing::MakeSlowCpuCluster();
  const int64_t GB = 1'000'000'000;
  const double unit_bytes = 100'000'000;
  const SearchCost fits = SearchCostOf(ResultWithPeaks(c, {0, GB / 2, GB / 2}, 1.4e6), c);
  const SearchCost fits_1pct_slower = SearchCostOf(ResultWithPeaks(c, {0, GB / 2, GB / 2}, 1.4e6 * 1.01), c);
  const SearchCost oom = SearchCostOf(ResultWithPeaks(c, {0, GB + 200'000'000, 0}, 0.3e6), c);
  const SearchCost oom_more = SearchCostOf(ResultWithPeaks(c, {0, GB + 300'000'000, 0}, 0.3e6), c);
  EXPECT_EQ(AcceptanceProbability(oom, fits, 100, unit_bytes), 1);
  EXPECT_EQ(AcceptanceProbability(fits, oom, 100, unit_bytes), 0);
  EXPECT_EQ(AcceptanceProbability(oom_more, oom, 100, unit_bytes), 1);
  // One unit's worth more overflow: 1/e.
  EXPECT_NEAR(AcceptanceProbability(oom, oom_more, 100, unit_bytes), std::exp(-1.0), 1e-12);
  EXPECT_NEAR(AcceptanceProbability(fits, fits_1pct_slower, 100, unit_bytes), std::exp(-1.0), 1e-9);
  EXPECT_EQ(AcceptanceProbability(fits_1pct_slower, fits, 100, unit_bytes), 1);
}

TEST(SearchCostTest, TheStartIsTheFastestThatFitsElseTheLeastOverflow) {
  const Cluster c = testing::MakeSlowCpuCluster();
  const int64_t GB = 1'000'000'000;
  std::vector<PlacerRun> runs = {{"single_gpu", {}, ResultWithPeaks(c, {0, 2 * GB, 0}, 0.3e6)},
                                 {"m_etf", {}, ResultWithPeaks(c, {0, GB / 2, GB / 2}, 1.4e6)},
                                 {"metis", {}, ResultWithPeaks(c, {0, GB / 2, GB / 2}, 1.2e6)},
                                 {"random", {}, ResultWithPeaks(c, {0, GB + 1, 0}, 0.2e6)}};
  EXPECT_EQ(BestStart(runs, c)->method, "metis");
  runs.erase(runs.begin() + 1, runs.begin() + 3);  // nothing fits now
  EXPECT_EQ(BestStart(runs, c)->method, "random");
  EXPECT_EQ(BestStart({}, c), nullptr);
}

// ---- end of the search cost block ----

TEST(LowerBoundTest, IsTheLargerOfCriticalPathAndWork) {
  Harness h(TwoHeavyBranches(), testing::MakeSlowCpuCluster());
  LowerBound bound = StepTimeLowerBound(h.graph, h.cluster, h.cost);
  EXPECT_NEAR(bound.critical_path_us, 30'000, 1);  // one chain on a GPU
  EXPECT_NEAR(bound.work_us, 60'000.0 / 3, 1);      // six 10 ms ops over three devices
  EXPECT_NEAR(bound.step_time_us(), 30'000, 1);
}

// Whatever part a partitioner answers for a vertex (outside every part, past
// the last part, or a part on a device of the wrong kind), its unit lands on
// a device that can run it.
TEST(PartitionInputTest, EveryPartAnswerGivesARunnableDevice) {
  Graph g = TwoHeavyBranches();
  g.mutable_op(0).device_kinds = MaskOf(DeviceKind::kCpu);
  g.mutable_op(3).device_kinds = MaskOf(DeviceKind::kGpu);
  Harness h(std::move(g), testing::MakeTestCluster());
  PlacementProblem problem{h.graph, h.cluster, h.cost, h.simulator, 0};
  const PartitionInput input = BuildPartitionInput(problem);
  ASSERT_GT(input.num_vertices(), 1);
  const std::vector<int32_t> device_of_part = {2, 0};  // part 0 on gpu:1, part 1 on cpu:0
  for (const int32_t answer : {-1, 0, 1, 2, 1000, -1000}) {
    const std::vector<int32_t> part(input.num_vertices(), answer);
    const std::vector<int32_t> devices = DevicesFromParts(problem, input, part, device_of_part);
    ASSERT_EQ(devices.size(), static_cast<size_t>(input.num_vertices()));
    for (int32_t v = 0; v < input.num_vertices(); ++v) {
      ASSERT_GE(devices[v], 0) << "part " << answer;
      ASSERT_LT(devices[v], h.cluster.num_devices()) << "part " << answer;
      EXPECT_TRUE(input.units.groups[v].device_kinds & MaskOf(h.cluster.devices[devices[v]].kind)) << "part " << answer;
      if (answer == 0 && (input.units.groups[v].device_kinds & MaskOf(DeviceKind::kGpu))) {
        EXPECT_EQ(devices[v], 2);
      }
    }
  }
}

}  // namespace
}  // namespace devplace
