#include "placers/dp_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cluster/presets.h"
#include "models/registry.h"
#include "models/synthetic.h"
#include "placement_problem.h"
#include "placers/methods.h"
#include "test_util.h"

namespace devplace {
namespace {

using dp_split::kNoSplit;
using dp_split::kOutside;
using dp_split::SplitEdge;
using dp_split::SplitModel;
using testing::MakeDevice;
using testing::MakeOp;
using testing::OwnedProblem;

// ---- The brute force: every contiguous split, its objective from scratch ----

// The objective of `stage_of_node` as the model defines it, computed
// directly from the nodes of each stage; kNoSplit if a predecessor comes in
// a later stage, a stage is outside 0..stages-1, or a stage does not fit.
double ObjectiveOf(const SplitModel& m, const std::vector<int32_t>& stage_of_node, int32_t stages) {
  const int32_t n = m.num_nodes();
  if (static_cast<int32_t>(stage_of_node.size()) != n) return kNoSplit;
  for (int32_t v = 0; v < n; ++v) {
    if (stage_of_node[v] < 0 || stage_of_node[v] >= stages) return kNoSplit;
    for (int32_t p : m.predecessors[v]) {
      if (stage_of_node[p] > stage_of_node[v]) return kNoSplit;
    }
  }
  double objective = 0;
  for (int32_t k = 0; k < stages; ++k) {
    double compute_us = 0;
    int64_t memory = 0;
    for (int32_t v = 0; v < n; ++v) {
      if (stage_of_node[v] != k) continue;
      compute_us += m.compute_us[k][v];
      memory += m.memory_bytes[v];
    }
    if (memory > m.capacity_bytes[k]) return kNoSplit;
    int64_t crossing = 0;
    for (const SplitEdge& e : m.edges) {
      const bool a_in = stage_of_node[e.a] == k;
      const bool b_in = e.b != kOutside && stage_of_node[e.b] == k;
      if (a_in != b_in) crossing += e.bytes;
    }
    objective = std::max(objective, compute_us + m.transfer_us_per_byte[k] * static_cast<double>(crossing));
  }
  return objective;
}

// The best objective over every assignment of nodes to stages 0..stages-1.
double BruteForceOptimum(const SplitModel& m, int32_t stages) {
  const int32_t n = m.num_nodes();
  std::vector<int32_t> stage(n, 0);
  double best = kNoSplit;
  while (true) {
    best = std::min(best, ObjectiveOf(m, stage, stages));
    int32_t i = 0;
    while (i < n && ++stage[i] == stages) stage[i++] = 0;
    if (i == n) break;
  }
  return best;
}

// Checks every entry of the program's table against the brute force, and
// that each split it returns is valid and has the objective it claims.
void ExpectMatchesBruteForce(const SplitModel& m, const std::string& what) {
  dp_split::SplitSolution solution = dp_split::SolveSplit(m);
  ASSERT_EQ(solution.over_cap, dp_split::OverCap::kNo) << what;
  ASSERT_EQ(static_cast<int32_t>(solution.best.size()), m.num_stages()) << what;
  for (int32_t k = 1; k <= m.num_stages(); ++k) {
    const double expected = BruteForceOptimum(m, k);
    const dp_split::StageSplit& split = solution.best[k - 1];
    if (expected == kNoSplit) {
      EXPECT_FALSE(split.found()) << what << ", " << k << " stages";
      continue;
    }
    ASSERT_TRUE(split.found()) << what << ", " << k << " stages";
    EXPECT_NEAR(split.objective_us, expected, 1e-9 * std::max(1.0, expected)) << what << ", " << k << " stages";
    EXPECT_NEAR(ObjectiveOf(m, split.stage_of_node, k), split.objective_us, 1e-9 * std::max(1.0, expected))
        << what << ", " << k << " stages: the split returned is not the one priced";
  }
}

// A deterministic source of small numbers (not std::uniform_int_distribution,
// whose output differs between standard libraries).
class Numbers {
 public:
  explicit Numbers(uint32_t seed) : engine_(seed) {}
  int32_t Below(int32_t n) { return static_cast<int32_t>(engine_() % static_cast<uint32_t>(n)); }

 private:
  std::mt19937 engine_;
};

// A model of `n` nodes with the given predecessors, random weights, a few
// edges beyond the DAG's (skip edges and edges to the outside), and
// `stages` stages of varied speed and transfer cost.
SplitModel RandomModel(std::vector<std::vector<int32_t>> predecessors, int32_t stages, Numbers& numbers,
                       bool tight_memory) {
  SplitModel m;
  const int32_t n = static_cast<int32_t>(predecessors.size());
  m.predecessors = std::move(predecessors);
  m.compute_us.assign(stages, std::vector<double>(n));
  for (int32_t v = 0; v < n; ++v) {
    const double work = 1 + numbers.Below(20);
    for (int32_t k = 0; k < stages; ++k) m.compute_us[k][v] = work * (1 + 0.5 * k);  // later stages slower
    m.memory_bytes.push_back(10 + numbers.Below(90));
  }
  for (int32_t v = 0; v < n; ++v) {
    for (int32_t p : m.predecessors[v]) m.edges.push_back({p, v, 1000 * (1 + numbers.Below(8))});
  }
  for (int32_t extra = 0; extra < 3; ++extra) {
    const int32_t a = numbers.Below(n), b = numbers.Below(n);
    if (a != b) m.edges.push_back({a, b, 500 * (1 + numbers.Below(4))});  // backward or skip: bytes, no order
  }
  m.edges.push_back({numbers.Below(n), kOutside, 2000});
  for (int32_t k = 0; k < stages; ++k) {
    m.capacity_bytes.push_back(tight_memory ? 150 + numbers.Below(150) : 1'000'000);
    m.transfer_us_per_byte.push_back(0.001 * (1 + numbers.Below(3)));
  }
  return m;
}

std::vector<std::vector<int32_t>> ChainOrder(int32_t n) {
  std::vector<std::vector<int32_t>> predecessors(n);
  for (int32_t v = 1; v < n; ++v) predecessors[v] = {v - 1};
  return predecessors;
}

// Diamonds in a row: 0 -> {1, 2} -> 3 -> {4, 5} -> 6 ...
std::vector<std::vector<int32_t>> DiamondOrder(int32_t n) {
  std::vector<std::vector<int32_t>> predecessors(n);
  for (int32_t v = 1; v < n; ++v) {
    const int32_t phase = v % 3;
    if (phase == 1) predecessors[v] = {v - 1};
    if (phase == 2) predecessors[v] = {v - 2};
    if (phase == 0) predecessors[v] = {v - 2, v - 1};
  }
  return predecessors;
}

TEST(DpSplitTest, MatchesBruteForceOnChainsAndDiamonds) {
  Numbers numbers(7);
  for (int32_t n = 6; n <= 9; ++n) {
    for (int32_t stages = 1; stages <= 3; ++stages) {
      for (bool tight : {false, true}) {
        const std::string what =
            std::to_string(n) + " nodes, " + std::to_string(stages) + " stages" + (tight ? ", tight memory" : "");
        ExpectMatchesBruteForce(RandomModel(ChainOrder(n), stages, numbers, tight), "chain of " + what);
        ExpectMatchesBruteForce(RandomModel(DiamondOrder(n), stages, numbers, tight), "diamonds of " + what);
      }
    }
  }
}

TEST(DpSplitTest, MatchesBruteForceOnRandomDags) {
  Numbers numbers(11);
  for (int trial = 0; trial < 30; ++trial) {
    const int32_t n = 6 + numbers.Below(4);
    std::vector<std::vector<int32_t>> predecessors(n);
    for (int32_t v = 1; v < n; ++v) {
      for (int32_t p = 0; p < v; ++p) {
        if (numbers.Below(3) == 0) predecessors[v].push_back(p);
      }
    }
    ExpectMatchesBruteForce(RandomModel(predecessors, 1 + numbers.Below(3), numbers, numbers.Below(2) == 0),
                            "random DAG " + std::to_string(trial));
  }
}

// Three GPUs of different speeds beside a CPU, peer links of different
// widths, so that stage order, speed and transfer cost all matter.
Cluster ThreeGpuCluster(int64_t gpu_memory_bytes = 1'000'000'000) {
  Cluster c;
  c.name = "three";
  c.devices = {MakeDevice("cpu:0", DeviceKind::kCpu), MakeDevice("gpu:0", DeviceKind::kGpu, gpu_memory_bytes),
               MakeDevice("gpu:1", DeviceKind::kGpu, gpu_memory_bytes),
               MakeDevice("gpu:2", DeviceKind::kGpu, gpu_memory_bytes)};
  c.devices[2].peak_flops_per_s = 2e12;
  c.links = {{0, 1, 1e9, 1, -1}, {0, 2, 1e9, 1, -1}, {0, 3, 1e9, 1, -1},
             {1, 2, 4e9, 1, -1}, {2, 3, 2e9, 1, -1}, {1, 3, 1e9, 1, -1}};
  c.Finalize("three gpu cluster");
  return c;
}

// A chain of ops with varied FLOPs and bytes, plus an optional skip edge.
Graph ChainGraph(int32_t n, bool skip) {
  Graph g;
  Numbers numbers(static_cast<uint32_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    g.AddOp(MakeOp(i, "op" + std::to_string(i), 1e6 * (1 + numbers.Below(50)), 4000 * (1 + numbers.Below(100))));
    if (i > 0) g.AddDataEdge(i - 1, 0, i);
  }
  if (skip) g.AddDataEdge(0, 0, n - 1);
  g.Finalize("chain");
  return g;
}

// Diamonds in a row, as DiamondOrder, of real ops.
Graph DiamondGraph(int32_t n) {
  Graph g;
  Numbers numbers(static_cast<uint32_t>(100 + n));
  const std::vector<std::vector<int32_t>> order = DiamondOrder(n);
  for (int32_t i = 0; i < n; ++i) {
    g.AddOp(MakeOp(i, "op" + std::to_string(i), 1e6 * (1 + numbers.Below(50)), 4000 * (1 + numbers.Below(100))));
    for (int32_t p : order[i]) g.AddDataEdge(p, 0, i);
  }
  g.Finalize("diamonds");
  return g;
}

TEST(DpSplitTest, ModelOfAChainIsItsOpsOnTheGpus) {
  Graph g;
  g.AddOp(MakeOp(0, "a", 2e6, 4000));
  g.AddOp(MakeOp(1, "b", 3e6, 8000));
  g.AddDataEdge(0, 0, 1);
  g.Finalize("two");
  OwnedProblem p(std::move(g));  // cpu:0, gpu:0, gpu:1 at 1e12 FLOP/s, 1e9 B/s links
  SplitModel m = dp_split::BuildSplitModel(p.get());
  EXPECT_EQ(m.stage_devices, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(m.node_of_op, (std::vector<int32_t>{0, 1}));
  ASSERT_EQ(m.num_nodes(), 2);
  EXPECT_DOUBLE_EQ(m.compute_us[0][0], 2);
  EXPECT_DOUBLE_EQ(m.compute_us[1][1], 3);
  EXPECT_EQ(m.memory_bytes, (std::vector<int64_t>{4000, 8000}));
  EXPECT_EQ(m.predecessors[1], (std::vector<int32_t>{0}));
  ASSERT_EQ(m.edges.size(), 1u);
  EXPECT_EQ(m.edges[0].bytes, 4000);
  EXPECT_DOUBLE_EQ(m.transfer_us_per_byte[0], 1e-3);  // 1e9 B/s
  // Two stages: max(2 + 4, 3 + 4) = 7 us; one: 5 us.
  dp_split::SplitSolution s = dp_split::SolveSplit(m);
  ASSERT_EQ(s.best.size(), 2u);
  EXPECT_NEAR(s.best[0].objective_us, 5, 1e-9);
  EXPECT_NEAR(s.best[1].objective_us, 5, 1e-9);  // splitting would cost more than it saves
}

TEST(DpSplitTest, MatchesBruteForceOnGraphsOfOps) {
  for (int32_t n = 6; n <= 9; ++n) {
    for (bool skip : {false, true}) {
      OwnedProblem p(ChainGraph(n, skip), ThreeGpuCluster());
      SplitModel m = dp_split::BuildSplitModel(p.get());
      ASSERT_EQ(m.num_nodes(), n);
      ASSERT_EQ(m.num_stages(), 3);
      ExpectMatchesBruteForce(m, "graph chain of " + std::to_string(n) + (skip ? " with a skip edge" : ""));
    }
    OwnedProblem p(DiamondGraph(n), ThreeGpuCluster());
    SplitModel m = dp_split::BuildSplitModel(p.get());
    ASSERT_EQ(m.num_nodes(), n);
    ExpectMatchesBruteForce(m, "graph diamonds of " + std::to_string(n));
  }
}

// Four ops of 1 us on a two-stage model whose first node fills stage 0.
SplitModel FirstNodeFillsAStage() {
  SplitModel m;
  m.predecessors = ChainOrder(4);
  m.compute_us.assign(2, std::vector<double>(4, 4.0));
  m.memory_bytes = {100, 1, 1, 1};
  m.capacity_bytes = {100, 1000};
  m.transfer_us_per_byte = {0, 0};
  return m;
}

TEST(DpSplitTest, MemoryRulesOutTheUnconstrainedOptimum) {
  SplitModel m = FirstNodeFillsAStage();
  SplitModel unlimited = m;
  unlimited.capacity_bytes = {1000, 1000};
  dp_split::SplitSolution free = dp_split::SolveSplit(unlimited);
  dp_split::SplitSolution tight = dp_split::SolveSplit(m);
  ASSERT_TRUE(free.best[1].found());
  ASSERT_TRUE(tight.best[1].found());
  EXPECT_DOUBLE_EQ(free.best[1].objective_us, 8);    // two and two
  EXPECT_DOUBLE_EQ(tight.best[1].objective_us, 12);  // the first alone: stage 0 holds nothing more
  EXPECT_EQ(tight.best[1].stage_of_node, (std::vector<int32_t>{0, 1, 1, 1}));
  EXPECT_FALSE(tight.best[0].found());  // nothing fits one stage
  ExpectMatchesBruteForce(m, "memory-bound chain");
}

// Ops of 10 ms holding `persistent_bytes` each, in a chain.
Graph HeavyChain(int32_t n, int64_t persistent_bytes) {
  Graph g;
  for (int32_t i = 0; i < n; ++i) {
    Op op = MakeOp(i, "layer" + std::to_string(i), 1e10, 4000);
    op.persistent_bytes = persistent_bytes;
    g.AddOp(op);
    if (i > 0) g.AddDataEdge(i - 1, 0, i);
  }
  g.Finalize("heavy chain");
  return g;
}

TEST(DpSplitTest, PlacerSplitsAChainOnlyWhenMemoryForcesIt) {
  {
    // Fits one GPU: a chain gains nothing from a split, so one GPU.
    OwnedProblem p(HeavyChain(4, 100'000'000), testing::MakeSlowCpuCluster());
    PlacerOutput out = PlaceDpSplit(p.get());
    EXPECT_EQ(out.note, "");
    EXPECT_EQ(out.placement, Placement(4, out.placement[0]));
    EXPECT_EQ(p.cluster.devices[out.placement[0]].kind, DeviceKind::kGpu);
  }
  {
    // 4 x 300 MB on 1 GB GPUs: three layers on the first, one on the second.
    OwnedProblem p(HeavyChain(4, 300'000'000), testing::MakeSlowCpuCluster());
    PlacerOutput out = PlaceDpSplit(p.get());
    EXPECT_EQ(out.note, "");
    EXPECT_FALSE(CheckPlacement(p.graph, p.cluster, out.placement).has_value());
    EXPECT_NE(out.placement.front(), out.placement.back());
    SimResult r = p.simulator.Run(out.placement);
    EXPECT_TRUE(r.ok()) << r.reason;
  }
}

TEST(DpSplitTest, SaysSoWhenNoSplitFits) {
  // 4 x 800 MB: no two layers share a 1 GB GPU, and there are two GPUs.
  OwnedProblem p(HeavyChain(4, 800'000'000), testing::MakeSlowCpuCluster());
  PlacerOutput out = PlaceDpSplit(p.get());
  EXPECT_NE(out.note.find("no contiguous split fits"), std::string::npos) << out.note;
  EXPECT_FALSE(CheckPlacement(p.graph, p.cluster, out.placement).has_value());
}

TEST(DpSplitTest, IndependentBranchesRunOnTwoGpus) {
  // Two chains of three 10 ms ops: one per GPU runs them at once.
  OwnedProblem p(testing::Chains(2), testing::MakeSlowCpuCluster());
  PlacerOutput out = PlaceDpSplit(p.get());
  EXPECT_EQ(out.note, "");
  const Placement& pl = out.placement;
  EXPECT_EQ(pl[0], pl[1]);
  EXPECT_EQ(pl[1], pl[2]);
  EXPECT_EQ(pl[3], pl[4]);
  EXPECT_EQ(pl[4], pl[5]);
  EXPECT_NE(pl[0], pl[3]);
  EXPECT_NEAR(p.simulator.Run(pl).step_time_us, 30'000, 100);
}

// A variable read by a forward op and updated at the end of the step, with
// the forward op's gradient co-located with it, as TensorFlow builds them;
// and an input only the CPU runs.
Graph VariableAndUpdate() {
  Graph g;
  Op input = MakeOp(0, "input", 0, 4000);
  input.device_kinds = MaskOf(DeviceKind::kCpu);
  Op w = MakeOp(1, "w", 0, 4000);
  w.persistent_bytes = 12'000;
  w.outputs[0].aliases_persistent = true;
  w.colocation_group = "w";
  Op mm = MakeOp(2, "mm", 1e6, 4000);
  mm.colocation_group = "mm";
  Op loss = MakeOp(3, "loss", 1e6, 4);
  Op grad = MakeOp(4, "mm_grad", 2e6, 4000);
  grad.phase = Phase::kBackward;
  grad.colocation_group = "mm";
  Op update = MakeOp(5, "w_update", 1e5, 4);
  update.phase = Phase::kUpdate;
  update.colocation_group = "w";
  for (Op* op : {&input, &w, &mm, &loss, &grad, &update}) g.AddOp(*op);
  g.AddDataEdge(0, 0, 2);
  g.AddDataEdge(1, 0, 2);
  g.AddDataEdge(2, 0, 3);
  g.AddDataEdge(3, 0, 4);
  g.AddDataEdge(0, 0, 4);
  g.AddDataEdge(4, 0, 5);
  g.AddDataEdge(1, 0, 5);
  g.Finalize("variable");
  return g;
}

TEST(DpSplitTest, VariableJoinsItsFirstConsumerAndCpuOpsStayOutside) {
  OwnedProblem p(VariableAndUpdate());
  SplitModel m = dp_split::BuildSplitModel(p.get());
  // Units: {w, w_update} joined to {mm, mm_grad}; loss; the input outside.
  ASSERT_EQ(m.num_nodes(), 2);
  EXPECT_EQ(m.node_of_op[0], kOutside);
  EXPECT_EQ(m.node_of_op[1], m.node_of_op[2]);
  EXPECT_EQ(m.node_of_op[5], m.node_of_op[2]);
  EXPECT_EQ(m.node_of_op[4], m.node_of_op[2]);
  EXPECT_NE(m.node_of_op[3], m.node_of_op[2]);
  // The loss comes after the matmul's unit; the gradient's edge back does not order them.
  EXPECT_EQ(m.predecessors[m.node_of_op[3]], (std::vector<int32_t>{m.node_of_op[2]}));
  EXPECT_TRUE(m.predecessors[m.node_of_op[2]].empty());
  // w's parameters and mm's output; the view of w allocates nothing, and the
  // gradient's and the update's outputs are transient.
  EXPECT_EQ(m.memory_bytes[m.node_of_op[2]], 12'000 + 4000);
  ExpectMatchesBruteForce(m, "variable and update");

  PlacerOutput out = PlaceDpSplit(p.get());
  EXPECT_FALSE(CheckPlacement(p.graph, p.cluster, out.placement).has_value());
  EXPECT_EQ(out.placement[0], 0);  // the input on the CPU
  EXPECT_EQ(out.placement[1], out.placement[2]);
  EXPECT_EQ(out.placement[1], out.placement[5]);
  EXPECT_EQ(p.cluster.devices[out.placement[2]].kind, DeviceKind::kGpu);
}

// `branches` independent chains of three ops from one input to one sum:
// (4^branches) down-sets.
Graph Branchy(int32_t branches) {
  Graph g;
  int32_t input = g.AddOp(MakeOp(0, "input", 1e6, 4000));
  int64_t id = 1;
  std::vector<int32_t> ends;
  for (int32_t b = 0; b < branches; ++b) {
    int32_t prev = input;
    for (int32_t i = 0; i < 3; ++i) {
      std::string name("b");  // appended piece by piece: GCC 12 warns (-Wrestrict) on "b" + ...
      name += std::to_string(b);
      name += '/';
      name += std::to_string(i);
      int32_t op = g.AddOp(MakeOp(id++, name, 1e6 * (1 + (b + i) % 5), 4000));
      g.AddDataEdge(prev, 0, op);
      prev = op;
    }
    ends.push_back(prev);
  }
  int32_t sum = g.AddOp(MakeOp(id++, "sum", 1e6, 4000));
  for (int32_t e : ends) g.AddDataEdge(e, 0, sum);
  g.Finalize("branchy");
  return g;
}

TEST(DpSplitTest, BranchyGraphCollapsesToAChain) {
  OwnedProblem p(Branchy(12), ThreeGpuCluster());
  dp_split::SplitSolution exact = dp_split::SolveSplit(dp_split::BuildSplitModel(p.get()));
  EXPECT_EQ(exact.over_cap, dp_split::OverCap::kDownSets);
  PlacerOutput out = PlaceDpSplit(p.get());
  EXPECT_NE(out.note.find("collapsed to a chain: more than 20000 down-sets of 38 units exceeded the cap of 20000"),
            std::string::npos)
      << out.note;
  EXPECT_FALSE(CheckPlacement(p.graph, p.cluster, out.placement).has_value());
  EXPECT_TRUE(p.simulator.Run(out.placement).ok());

  // A few branches stay exact.
  OwnedProblem small(Branchy(3), ThreeGpuCluster());
  EXPECT_EQ(PlaceDpSplit(small.get()).note, "");
}

TEST(DpSplitTest, LongChainCollapsesIntoAtMostTheSegmentCap) {
  // 5,000 ops in a row: 5,001 down-sets, but 12.5 million nested pairs.
  Graph g;
  for (int32_t i = 0; i < 5000; ++i) {
    g.AddOp(MakeOp(i, "op" + std::to_string(i), 1e6, 4000));
    if (i > 0) g.AddDataEdge(i - 1, 0, i);
  }
  g.Finalize("long chain");
  OwnedProblem p(std::move(g), ThreeGpuCluster());
  PlacerOutput out = PlaceDpSplit(p.get());
  EXPECT_NE(out.note.find("collapsed to a chain: more than 10000000 nested pairs of down-sets of 5000 units exceeded "
                          "the cap of 10000000"),
            std::string::npos)
      << out.note;
  // Equal ops: the chain is cut into exactly the cap's number of segments.
  EXPECT_NE(out.note.find("(" + std::to_string(dp_split::kMaxChainSegments) + " segments)"), std::string::npos)
      << out.note;
  EXPECT_FALSE(CheckPlacement(p.graph, p.cluster, out.placement).has_value());
}

TEST(DpSplitTest, ValidOnBuiltInModels) {
  for (const char* name : {"tiny", "rnnlm", "inception_v3"}) {
    Graph g = MakeModel(name);
    Cluster c = *MakeClusterPreset("k80x2");
    CostModel cost(c);
    Simulator simulator(g, c, cost);
    PlacementProblem problem{g, c, cost, simulator, 0};
    PlacerOutput out = PlaceDpSplit(problem);
    auto problem_text = CheckPlacement(g, c, out.placement);
    EXPECT_FALSE(problem_text.has_value()) << name << ": " << *problem_text;
    SimResult r = simulator.Run(out.placement);
    EXPECT_FALSE(r.invalid) << name << ": " << r.reason;
    if (std::string(name) != "tiny") {
      EXPECT_NE(out.note.find("collapsed to a chain"), std::string::npos) << out.note;
    }
  }
}

TEST(DpSplitTest, DeterministicOnALargeGraph) {
  SyntheticOptions options;
  options.num_ops = 20'000;
  options.width = 4;
  Graph g = MakeSyntheticGraph(options);
  Cluster c = *MakeClusterPreset("p100x4");
  CostModel cost(c);
  Simulator simulator(g, c, cost);
  PlacementProblem problem{g, c, cost, simulator, 0};
  PlacerOutput first = PlaceDpSplit(problem);
  PlacerOutput second = PlaceDpSplit(problem);
  EXPECT_EQ(first.placement, second.placement);
  EXPECT_EQ(first.note, second.note);
  EXPECT_NE(first.note.find("collapsed to a chain"), std::string::npos) << first.note;
  EXPECT_NE(first.note.find("segments"), std::string::npos) << first.note;
  EXPECT_FALSE(CheckPlacement(g, c, first.placement).has_value());
}

}  // namespace
}  // namespace devplace
