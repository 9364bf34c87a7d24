#include <gtest/gtest.h>

#include "cluster/presets.h"
#include "models/synthetic.h"
#include "placers/methods.h"
#include "placers/placer.h"
#include "sim/lower_bound.h"
#include "test_util.h"
#include "util/error.h"

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

TEST(PlacersTest, SingleDevicePlacersUseTheirDevice) {
  Harness h(OversizedOp(), testing::MakeSlowCpuCluster());
  EXPECT_EQ(h.Place("single_cpu").placement, (Placement{0, 0, 0}));
  Placement gpu = h.Place("single_gpu").placement;
  EXPECT_EQ(gpu, (Placement{1, 1, 1}));
  EXPECT_TRUE(h.simulator.Run(gpu).oom);  // as in Table 2: single GPU can run out of memory
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

TEST(LowerBoundTest, IsTheLargerOfCriticalPathAndWork) {
  Harness h(TwoHeavyBranches(), testing::MakeSlowCpuCluster());
  LowerBound bound = StepTimeLowerBound(h.graph, h.cluster, h.cost);
  EXPECT_NEAR(bound.critical_path_us, 30'000, 1);  // one chain on a GPU
  EXPECT_NEAR(bound.work_us, 60'000.0 / 3, 1);      // six 10 ms ops over three devices
  EXPECT_NEAR(bound.step_time_us(), 30'000, 1);
}

}  // namespace
}  // namespace devplace
