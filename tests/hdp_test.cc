// HDP's Grouper+Placer policy (learned/policies/hdp_policy.h) and the op features it reads
// (learned/features/op_features.h): probabilities that agree between sampling and
// scoring, placements that keep co-location and device kinds, imitation.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "learned/policies/hdp_policy.h"
#include "learned/methods.h"
#include "learned/features/op_features.h"
#include "learned/training/optimizer.h"
#include "learned/learned_placer.h"
#include "placement_problem.h"
#include "test_util.h"
#include "util/error.h"

namespace devplace {
namespace {

using testing::MakeOp;

// A chain of 14 ops with everything a unit can be: co-location groups of
// neighbours and of distant ops, CPU-only and GPU-only ops, a co-location
// group made CPU-only by one member, and a side branch.
Graph ConstrainedGraph() {
  Graph g;
  const char* types[] = {"MatMul", "Conv2D", "Add"};
  int32_t prev = -1;
  for (int i = 0; i < 14; ++i) {
    Op op = MakeOp(i, "op" + std::to_string(i), 1e6 * (i + 1), 4000 * (i + 1));
    op.type = types[i % 3];
    if (i == 2 || i == 3) op.colocation_group = "var1";
    if (i == 5 || i == 9) op.colocation_group = "var2";
    if (i == 10 || i == 11) op.colocation_group = "cpuvar";
    if (i == 0 || i == 10) op.device_kinds = MaskOf(DeviceKind::kCpu);
    if (i == 7) op.device_kinds = MaskOf(DeviceKind::kGpu);
    int32_t index = g.AddOp(op);
    if (prev >= 0) g.AddDataEdge(prev, 0, index);
    prev = index;
  }
  g.AddDataEdge(1, 0, 12);  // a skip connection
  g.AddDataEdge(1, 0, 4);
  g.Finalize("constrained");
  return g;
}

using Problem = testing::OwnedProblem;

LearnedOptions HdpOptions(int32_t groups = 0) {
  LearnedOptions o;
  o.method = "hdp";
  o.hdp.groups = groups;
  o.seq2seq.encoder_hidden = 16;
  o.seq2seq.decoder_hidden = 32;
  o.hdp.grouper_hidden = 16;
  return o;
}

torch::Generator Seeded(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

std::unique_ptr<Policy> MakePolicy(Problem& p, const LearnedOptions& options, uint64_t seed = 3) {
  torch::manual_seed(seed);
  return MakeHdpPolicy(p.get(), options);
}

const HdpLogProbs& Parts(PolicyPass& pass) { return dynamic_cast<HdpPassParts&>(pass).last_parts(); }

// Every op on a device of a kind it can run, and every co-location group on one device.
void ExpectValid(const Graph& graph, const Cluster& cluster, const Placement& placement) {
  ASSERT_EQ(placement.size(), static_cast<size_t>(graph.num_ops()));
  std::map<std::string, int32_t> device_of_group;
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    const int32_t d = placement[op];
    ASSERT_GE(d, 0);
    ASSERT_LT(d, cluster.num_devices());
    EXPECT_TRUE(graph.op(op).device_kinds & MaskOf(cluster.devices[d].kind)) << graph.op(op).name << " on " << cluster.devices[d].name;
    const std::string& group = graph.op(op).colocation_group;
    if (group.empty()) continue;
    auto [it, inserted] = device_of_group.emplace(group, d);
    EXPECT_EQ(it->second, d) << "co-location group " << group << " split";
  }
  EXPECT_EQ(CheckPlacement(graph, cluster, placement), std::nullopt);
}

TEST(OpFeaturesTest, UnitsFollowCoLocationAndIntersectKinds) {
  Graph graph = ConstrainedGraph();
  OpFeatures f = BuildOpFeatures(graph, testing::MakeTestCluster());
  EXPECT_EQ(f.num_units, 11);  // 14 ops, three pairs merged
  EXPECT_EQ(f.unit_of_op[2], f.unit_of_op[3]);
  EXPECT_EQ(f.unit_of_op[5], f.unit_of_op[9]);
  EXPECT_EQ(f.unit_of_op[10], f.unit_of_op[11]);
  EXPECT_NE(f.unit_of_op[4], f.unit_of_op[5]);
  EXPECT_EQ(f.unit_kinds[f.unit_of_op[11]], MaskOf(DeviceKind::kCpu));  // made CPU-only by op10
  EXPECT_EQ(f.unit_kinds[f.unit_of_op[7]], MaskOf(DeviceKind::kGpu));
  EXPECT_EQ(f.unit_kinds[f.unit_of_op[4]], kAllDeviceKinds);
  // Units in topological order of their first op.
  int32_t next_unit = 0;
  for (int32_t op : graph.topological_order()) {
    if (f.unit_of_op[op] == next_unit) ++next_unit;
    EXPECT_LT(f.unit_of_op[op], next_unit) << op;
  }
  EXPECT_EQ(next_unit, f.num_units);
  // Edges inside a unit (2 -> 3) are dropped; each unit pair appears once.
  std::set<std::pair<int32_t, int32_t>> pairs;
  for (int32_t e = 0; e < f.num_edges(); ++e) {
    EXPECT_NE(f.edge_src[e], f.edge_dst[e]);
    EXPECT_TRUE(pairs.emplace(f.edge_src[e], f.edge_dst[e]).second);
  }
  EXPECT_EQ(f.num_types(), 3);
  EXPECT_EQ(f.type_names[f.op_type[1]], "Conv2D");
}

TEST(OpFeaturesTest, AdjacencyHoldsNeighbourPositionsAndMinusOneWhenAbsent) {
  Graph graph = ConstrainedGraph();
  OpFeatures f = BuildOpFeatures(graph, testing::MakeTestCluster());
  const int32_t first = f.unit_of_op[0];
  const float* row = &f.adjacency[first * OpFeatures::kAdjacencyFeatures];
  for (int k = 0; k < OpFeatures::kNeighbours; ++k) EXPECT_EQ(row[k], -1.0f);  // no predecessors
  EXPECT_FLOAT_EQ(row[OpFeatures::kNeighbours], static_cast<float>(f.unit_of_op[1]) / f.num_units);
  EXPECT_EQ(row[OpFeatures::kNeighbours + 1], -1.0f);
  // op1 feeds op2 (unit var1), op4 and op12: three successors, sorted.
  const float* succ = &f.adjacency[f.unit_of_op[1] * OpFeatures::kAdjacencyFeatures + OpFeatures::kNeighbours];
  EXPECT_FLOAT_EQ(succ[0], static_cast<float>(f.unit_of_op[2]) / f.num_units);
  EXPECT_FLOAT_EQ(succ[1], static_cast<float>(f.unit_of_op[4]) / f.num_units);
  EXPECT_FLOAT_EQ(succ[2], static_cast<float>(f.unit_of_op[12]) / f.num_units);
  EXPECT_EQ(succ[3], -1.0f);
}

// A three-layer network's training step: forward f0 -> f1 -> f2 -> loss,
// backward b2 -> b1 -> b0, each backward op reading its forward op's
// activation (the heaviest edge it has), and an update u1 reading b1.
Graph TrainingChain() {
  Graph g;
  auto add = [&](const std::string& name, Phase phase, int64_t bytes) {
    Op op = MakeOp(g.num_ops(), name, 1e6, bytes);
    op.phase = phase;
    return g.AddOp(op);
  };
  const int32_t f0 = add("f0", Phase::kForward, 8000), f1 = add("f1", Phase::kForward, 8000);
  const int32_t f2 = add("f2", Phase::kForward, 8000), loss = add("loss", Phase::kForward, 4);
  const int32_t b2 = add("b2", Phase::kBackward, 400), b1 = add("b1", Phase::kBackward, 400);
  const int32_t b0 = add("b0", Phase::kBackward, 400), u1 = add("u1", Phase::kUpdate, 4);
  g.AddDataEdge(f0, 0, f1);
  g.AddDataEdge(f1, 0, f2);
  g.AddDataEdge(f2, 0, loss);
  g.AddDataEdge(loss, 0, b2);
  g.AddDataEdge(b2, 0, b1);
  g.AddDataEdge(b1, 0, b0);
  g.AddDataEdge(b1, 0, u1);
  g.AddDataEdge(f0, 0, b0);  // activations
  g.AddDataEdge(f1, 0, b1);
  g.AddDataEdge(f2, 0, b2);
  g.Finalize("training_chain");
  return g;
}

TEST(OpFeaturesTest, PositionsPutEachBackwardOpBesideItsForwardOp) {
  Graph graph = TrainingChain();
  OpFeatures f = BuildOpFeatures(graph, testing::MakeTestCluster());
  ASSERT_EQ(f.unit_position.size(), static_cast<size_t>(f.num_units));
  std::vector<std::pair<float, std::string>> by_position;
  for (int32_t op = 0; op < graph.num_ops(); ++op) by_position.emplace_back(f.unit_position[f.unit_of_op[op]], graph.op(op).name);
  std::sort(by_position.begin(), by_position.end());
  std::vector<std::string> names;
  for (const auto& [position, name] : by_position) {
    EXPECT_GE(position, 0.0f);
    EXPECT_LT(position, 1.0f);
    names.push_back(name);
  }
  // u1 has no forward neighbour: it takes b1's place through b1.
  EXPECT_EQ(names, (std::vector<std::string>{"f0", "b0", "f1", "b1", "u1", "f2", "b2", "loss"}));
  // Equal FLOPs: evenly spaced, each in the middle of its share.
  for (size_t i = 0; i < by_position.size(); ++i) EXPECT_NEAR(by_position[i].first, (i + 0.5) / 8.0, 1e-6);
}

TEST(OpFeaturesTest, PositionsGiveHeavyOpsAWiderStretch) {
  // A chain of four ops, the third with almost all the FLOPs: half the
  // range is spaced by count, half by FLOPs, so it takes about 0.6 of it.
  Graph g;
  for (int i = 0; i < 4; ++i) {
    g.AddOp(MakeOp(i, "op" + std::to_string(i), i == 2 ? 1e12 : 1.0, 64));
    if (i > 0) g.AddDataEdge(i - 1, 0, i);
  }
  g.Finalize("heavy");
  OpFeatures f = BuildOpFeatures(g, testing::MakeTestCluster());
  for (int i = 0; i + 1 < 4; ++i) EXPECT_LT(f.unit_position[f.unit_of_op[i]], f.unit_position[f.unit_of_op[i + 1]]);
  EXPECT_NEAR(f.unit_position[f.unit_of_op[1]], 0.125 + 0.0625, 1e-6);  // two count shares of 1/8
  EXPECT_NEAR(f.unit_position[f.unit_of_op[2]], 0.25 + 0.3125, 1e-6);   // then its own 1/8 + 1/2, halved
  EXPECT_NEAR(f.unit_position[f.unit_of_op[3]], 0.875 + 0.0625, 1e-6);
}

TEST(OpFeaturesTest, RareTypesShareOneIdPastTheVocabulary) {
  Graph g;
  for (int i = 0; i < OpFeatures::kMaxTypes + 10; ++i) {
    Op op = MakeOp(i, "op" + std::to_string(i), 1e6, 400);
    char type[16];  // not "T" + std::to_string(i): GCC 12 warns falsely there (-Wrestrict)
    std::snprintf(type, sizeof type, "T%d", i);
    op.type = type;
    g.AddOp(op);
  }
  g.Finalize("types");
  OpFeatures f = BuildOpFeatures(g, testing::MakeTestCluster());
  EXPECT_EQ(f.num_types(), OpFeatures::kMaxTypes);
  EXPECT_EQ(f.type_names.back(), "other");
  for (int32_t t : f.op_type) EXPECT_LT(t, OpFeatures::kMaxTypes);
}

TEST(OpFeaturesTest, OpNoClusterDeviceCanRunIsAnError) {
  Graph g;
  Op op = MakeOp(0, "gpu_only", 1e6, 400);
  op.device_kinds = MaskOf(DeviceKind::kGpu);
  g.AddOp(op);
  g.Finalize("g");
  Cluster cpus;
  cpus.name = "cpus";
  cpus.devices = {testing::MakeDevice("cpu:0", DeviceKind::kCpu)};
  cpus.Finalize("cpus");
  EXPECT_THROW(BuildOpFeatures(g, cpus), Error);
}

TEST(HdpPolicyTest, StayBiasMakesRunsOfGroupsOverDevicesUnlessGiven) {
  for (auto [groups, devices] : {std::pair<int64_t, int32_t>{100, 5}, {60, 3}, {40, 5}, {160, 8}}) {
    const double s = HdpStayBias(groups, devices);
    const double stay = std::exp(s) / (std::exp(s) + devices - 1);
    EXPECT_NEAR(stay, 1.0 - static_cast<double>(devices) / groups, 1e-9) << groups << " groups, " << devices << " devices";
  }
  EXPECT_NEAR(HdpStayBias(100, 5), std::log(76.0), 1e-12);
  EXPECT_EQ(HdpStayBias(10, 1), 0);  // one device: nothing to stay on
  EXPECT_EQ(HdpStayBias(4, 4), 0);   // as many groups as devices: no runs to make
  EXPECT_EQ(HdpStayBias(5, 4), 0);   // 1 - 4/5 is below uniform's 1/4... floored at no bonus

  Problem p(ConstrainedGraph());
  auto bias_of = [](Policy& policy) {
    for (const auto& item : policy.module().named_parameters()) {
      if (item.key() == "stay_bias") return item.value().item<double>();
    }
    return std::nan("");
  };
  LearnedOptions options = HdpOptions(6);
  auto policy = MakePolicy(p, options);
  EXPECT_NEAR(bias_of(*policy), HdpStayBias(6, p.cluster.num_devices()), 1e-6);
  options.seq2seq.stay_bias = 1.5;
  policy = MakePolicy(p, options);
  EXPECT_NEAR(bias_of(*policy), 1.5, 1e-6);
}

// HDP's stay bonus, locality weight and slow-device penalty learn at
// --prior-learning-rate, the
// rest at --learning-rate: one Adam step moves each by about its own rate.
// The 2017 policy has no priors (its stay bonus keeps the network's rate).
TEST(HdpPolicyTest, PriorsLearnAtTheirOwnRate) {
  Problem p(ConstrainedGraph(), testing::MakeSlowCpuCluster());  // a slow device: its penalty has a gradient
  LearnedOptions options = HdpOptions(6);
  options.learning_rate = 1e-4;
  options.prior_learning_rate = 0.05;
  auto policy = MakePolicy(p, options);
  auto optimizer = MakePolicyOptimizer(*policy, options);
  ASSERT_EQ(optimizer->param_groups().size(), 2u);
  EXPECT_EQ(optimizer->param_groups()[1].params().size(), 3u);
  EXPECT_EQ(optimizer->param_groups()[0].params().size() + 3, policy->module().parameters().size());

  auto values = [&] {
    std::map<std::string, torch::Tensor> out;
    for (const auto& item : policy->module().named_parameters()) out[item.key()] = item.value().detach().clone();
    return out;
  };
  const auto before = values();
  torch::Generator gen = Seeded(4);
  auto pass = policy->Begin();
  PolicySamples sampled = pass->Sample(8, gen, {});
  torch::Tensor loss = pass->Score(sampled.decisions).log_prob.mean();  // any loss that reaches every part
  policy->module().zero_grad();
  loss.backward();
  optimizer->step();
  const auto after = values();
  for (const auto& [name, value] : before) {
    const double moved = (after.at(name) - value).abs().max().item<double>();
    if (name == "stay_bias" || name == "grouper_locality" || name == "slow_device_penalty") {
      EXPECT_NEAR(moved, 0.05, 0.005) << name;  // Adam's first step: the rate times the gradient's sign
    } else {
      EXPECT_LE(moved, 1.1e-4) << name;
    }
  }

  // Both rates decay on the same schedule.
  options.lr_decay = 0.5;
  options.lr_decay_every = 10;
  options.lr_decay_start = 100;
  EXPECT_DOUBLE_EQ(ScheduledLearningRates(options, 100).priors, 0.05);
  EXPECT_DOUBLE_EQ(ScheduledLearningRates(options, 125).priors, 0.0125);
  EXPECT_DOUBLE_EQ(ScheduledLearningRates(options, 125).network, 2.5e-5);
  SetLearningRates(*optimizer, ScheduledLearningRates(options, 125));
  EXPECT_DOUBLE_EQ(static_cast<torch::optim::AdamOptions&>(optimizer->param_groups()[1].options()).lr(), 0.0125);

  LearnedOptions rl = options;
  rl.method = "rl";
  torch::manual_seed(1);
  auto seq2seq = devplace::MakePolicy(p.get(), rl);
  EXPECT_EQ(MakePolicyOptimizer(*seq2seq, rl)->param_groups().size(), 1u);
}

// The learned locality weight cannot turn the prior around: below 0 it
// counts as 0 (the prior off). A negative weight, reached by its own Adam
// steps, sent every unit to the farthest group and collapsed a long run.
TEST(HdpPolicyTest, ANegativeLocalityWeightTurnsThePriorOffNotAround) {
  Problem p(ConstrainedGraph(), testing::MakeSlowCpuCluster());
  LearnedOptions options = HdpOptions(6);
  auto policy = MakePolicy(p, options);
  torch::Generator gen = Seeded(5);
  PolicySamples sampled = policy->Begin()->Sample(4, gen, {});
  auto grouping_log_probs = [&](float locality) {
    for (auto& item : policy->module().named_parameters()) {
      if (item.key() == "grouper_locality") {
        torch::NoGradGuard no_grad;
        item.value().fill_(locality);
      }
    }
    auto pass = policy->Begin();
    pass->Score(sampled.decisions);
    return Parts(*pass).grouping.detach().clone();
  };
  const torch::Tensor off = grouping_log_probs(0.0f);
  EXPECT_TRUE(torch::equal(grouping_log_probs(-0.5f), off));
  EXPECT_TRUE(torch::equal(grouping_log_probs(-100.0f), off));
  EXPECT_FALSE(torch::allclose(grouping_log_probs(0.5f), off));  // a positive weight still shapes the groups
}

// A network of `modules` blocks, each two heavy parallel branches between a
// light input and a light join (an Inception-like shape): its fast
// placements put the two branches of a block on different GPUs.
Graph BranchyGraph(int modules) {
  Graph g;
  int32_t prev = -1;
  for (int m = 0; m < modules; ++m) {
    const std::string b = "block" + std::to_string(m);
    const int32_t in = g.AddOp(MakeOp(g.num_ops(), b + "/in", 1e6, 4000));
    if (prev >= 0) g.AddDataEdge(prev, 0, in);
    const int32_t left = g.AddOp(MakeOp(g.num_ops(), b + "/left", 1e9, 4000));
    const int32_t right = g.AddOp(MakeOp(g.num_ops(), b + "/right", 1e9, 4000));
    const int32_t join = g.AddOp(MakeOp(g.num_ops(), b + "/join", 1e6, 4000));
    g.AddDataEdge(in, 0, left);
    g.AddDataEdge(in, 0, right);
    g.AddDataEdge(left, 0, join);
    g.AddDataEdge(right, 0, join);
    prev = join;
  }
  g.Finalize("branchy");
  return g;
}

// Two layers unrolled over `steps` (an RNN-like shape): layer 1's step t
// needs layer 0's step t and its own step t-1, and sending a tensor costs
// 40 % of an op.
// Its fast placements give each layer a device, so the layers overlap in
// time and only the layer-to-layer tensors cross.
Graph TwoLayerGraph(int steps) {
  Graph g;
  std::vector<int32_t> below;
  for (int layer = 0; layer < 2; ++layer) {
    std::vector<int32_t> row;
    for (int t = 0; t < steps; ++t) {
      // (appended piece by piece: GCC 12 warns, wrongly, on the chain of +)
      std::string name = "layer" + std::to_string(layer);
      name += "/step";
      name += std::to_string(t);
      const int32_t op = g.AddOp(MakeOp(g.num_ops(), name, 1e9, 400'000));
      if (t > 0) g.AddDataEdge(row.back(), 0, op);
      if (layer > 0) g.AddDataEdge(below[t], 0, op);
      row.push_back(op);
    }
    below = row;
  }
  g.Finalize("two layers");
  return g;
}

// The stay bonus HDP starts from after measuring its probes on `graph`.
double ChosenStayBias(Graph graph, const LearnedOptions& options, std::vector<double>* times_s = nullptr) {
  Problem p(std::move(graph), testing::MakeSlowCpuCluster());
  auto policy = MakePolicy(p, options);
  std::vector<double> times;
  for (const Decision& d : policy->StartProbes()) {
    const SimResult r = p.simulator.Run(policy->ToPlacement(d));
    times.push_back(r.invalid || r.oom ? std::numeric_limits<double>::infinity() : r.step_time_us * 1e-6);
  }
  policy->ChooseStart(times);
  if (times_s != nullptr) *times_s = times;
  return policy->prior_parameters()[0].item<double>();
}

TEST(HdpPolicyTest, ProbeRunLengthsHalveFromOneStagePerDevice) {
  EXPECT_EQ(HdpProbeRunLengths(60, 2), (std::vector<double>{30, 15, 7.5, 3.75, 1}));
  EXPECT_EQ(HdpProbeRunLengths(100, 4), (std::vector<double>{25, 12.5, 6.25, 3.125, 1}));
  EXPECT_EQ(HdpProbeRunLengths(3, 2), (std::vector<double>{1}));
  for (double run : {2.0, 5.0, 20.0}) {
    const double s = HdpStayBiasForRuns(run, 3);
    EXPECT_NEAR(std::exp(s) / (std::exp(s) + 2), 1 - 1 / run, 1e-9) << run;
  }
  EXPECT_EQ(HdpStayBiasForRuns(1, 3), 0);
  EXPECT_EQ(HdpStayBiasForRuns(1.2, 3), 0);  // below uniform: no bonus, never a malus
}

// Each probe is the locality prior's grouping placed in runs over the fast
// devices (not the slow host CPU); the start takes the fastest probe's run.
TEST(HdpPolicyTest, StartProbesPlaceStretchesInRunsAndTheFastestSetsTheStayBonus) {
  Problem p(BranchyGraph(6), testing::MakeSlowCpuCluster());
  LearnedOptions options = HdpOptions(8);
  auto policy = MakePolicy(p, options);
  const std::vector<Decision> probes = policy->StartProbes();
  const std::vector<double> runs = HdpProbeRunLengths(8, 2);  // the two GPUs
  ASSERT_EQ(probes.size(), runs.size());
  const int64_t U = policy->num_units();
  for (size_t i = 0; i < probes.size(); ++i) {
    for (int64_t g = 0; g < 8; ++g) {
      EXPECT_EQ(probes[i][U + g], 1 + static_cast<int64_t>(std::floor(g / runs[i])) % 2) << "probe " << i << " group " << g;
    }
    // Every probe keeps the same grouping; only the groups' devices differ.
    EXPECT_TRUE(std::equal(probes[i].begin(), probes[i].begin() + U, probes[0].begin())) << "probe " << i;
  }
  // Groups follow the locality order: a stretch of units per group.
  std::vector<float> position = BuildOpFeatures(p.graph, p.cluster).unit_position;
  for (int64_t u = 0; u < U; ++u) EXPECT_EQ(probes[0][u], static_cast<int32_t>(std::floor(position[u] * 8))) << u;

  auto stay = [&] { return policy->prior_parameters()[0].item<double>(); };
  const double untouched = stay();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> times(runs.size(), 2.0);
  times[1] = 1.0;
  times[2] = inf;
  policy->ChooseStart(times);
  EXPECT_EQ(stay(), untouched);  // one ran out of memory: runs of N / D stay
  times[2] = 3.0;
  policy->ChooseStart(times);
  EXPECT_NEAR(stay(), HdpStayBiasForRuns(runs[1], 3), 1e-6);
  policy->ChooseStart(std::vector<double>(runs.size(), 1.0));  // a tie: the longest run, capped at N / D
  EXPECT_NEAR(stay(), HdpStayBias(8, 3), 1e-6);

  options.seq2seq.stay_bias = 1;
  EXPECT_TRUE(MakePolicy(p, options)->StartProbes().empty());  // a given bonus is used as it is
}

TEST(HdpPolicyTest, SlowDevicePenaltyPutsAboutOneGroupInNOnTheSlowDevices) {
  for (int64_t groups : {8, 100, 256}) {
    for (int32_t fast : {1, 2, 4, 8}) {
      const double s = HdpSlowDevicePenalty(groups, fast, 1);
      if (groups - 1 < fast) {
        EXPECT_EQ(s, 0);  // already rarer than 1 in N: never a bonus
        continue;
      }
      EXPECT_NEAR(std::exp(-s) / (fast + std::exp(-s)), 1.0 / groups, 1e-9) << groups << " " << fast;
    }
  }
  EXPECT_EQ(HdpSlowDevicePenalty(100, 4, 0), 0);  // no slow devices
  EXPECT_EQ(HdpSlowDevicePenalty(2, 4, 1), 0);    // never a bonus for them
}

// Once a probe (on the fast devices alone) runs, the slow device (the
// cluster's host CPU) starts disfavoured; if none runs it is needed for
// memory and stays as likely as any. A probe that failed by chance (NaN)
// is left out; one out of memory keeps runs of N / D but not the CPU's odds.
TEST(HdpPolicyTest, AProbeThatRunsMakesTheSlowDevicesStartDisfavoured) {
  Problem p(BranchyGraph(6), testing::MakeSlowCpuCluster());
  LearnedOptions options = HdpOptions(8);
  const size_t probes = HdpProbeRunLengths(8, 2).size();
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  auto start = [&](std::vector<double> times) {
    auto policy = MakePolicy(p, options);
    policy->ChooseStart(times);
    return std::make_pair(policy->prior_parameters()[0].item<double>(), policy->prior_parameters()[2].item<double>());
  };
  const double untouched_stay = start(std::vector<double>(probes, inf)).first;
  EXPECT_EQ(start(std::vector<double>(probes, inf)).second, 0);  // nothing fits the GPUs alone
  EXPECT_EQ(start(std::vector<double>(probes, nan)).second, 0);  // nothing known
  EXPECT_EQ(start(std::vector<double>(probes, nan)).first, untouched_stay);

  std::vector<double> times(probes, inf);
  times[1] = 2.0;
  EXPECT_NEAR(start(times).second, HdpSlowDevicePenalty(8, 2, 1), 1e-6);
  EXPECT_EQ(start(times).first, untouched_stay);  // out of memory elsewhere: runs of N / D
  std::fill(times.begin(), times.end(), 3.0);
  times[0] = nan;  // the longest run failed by chance: the fastest of the others
  times[2] = 1.0;
  EXPECT_NEAR(start(times).first, HdpStayBiasForRuns(HdpProbeRunLengths(8, 2)[2], 3), 1e-6);

  // A given penalty is used as it is, and steers the Placer's groups.
  auto group_devices = [&](double penalty) {
    options.hdp.slow_device_penalty = penalty;
    auto policy = MakePolicy(p, options);
    policy->ChooseStart(std::vector<double>(probes, 1.0));
    EXPECT_NEAR(policy->prior_parameters()[2].item<double>(), penalty, 1e-6);
    torch::Generator gen = Seeded(3);
    std::set<int32_t> devices;
    const int64_t U = policy->num_units();
    for (const Decision& d : policy->Begin()->Sample(16, gen, {}).decisions) devices.insert(d.begin() + U, d.end());
    return devices;
  };
  EXPECT_EQ(group_devices(50), (std::set<int32_t>{1, 2}));  // never the CPU
  EXPECT_EQ(group_devices(-50), (std::set<int32_t>{0}));    // only the CPU
}

// The point of probing: a network of parallel branches starts with short
// runs (neighbouring stretches on different devices), an unrolled one with
// long runs (a device per layer).
TEST(HdpPolicyTest, BranchyNetworksStartWithShortRunsAndUnrolledOnesWithLong) {
  std::vector<double> branchy_s, layered_s;
  const double branchy = ChosenStayBias(BranchyGraph(8), HdpOptions(16), &branchy_s);
  const double layered = ChosenStayBias(TwoLayerGraph(16), HdpOptions(16), &layered_s);
  EXPECT_EQ(branchy, 0) << ::testing::PrintToString(branchy_s);
  EXPECT_NEAR(layered, HdpStayBias(16, 3), 1e-6) << ::testing::PrintToString(layered_s);
}

TEST(HdpPolicyTest, GroupCountFollowsThePaperUnlessGiven) {
  EXPECT_EQ(HdpGroupCount(HdpOptions(), 3, 1000), 60);
  EXPECT_EQ(HdpGroupCount(HdpOptions(), 8, 1000), 160);
  EXPECT_EQ(HdpGroupCount(HdpOptions(), 64, 100000), 256);
  EXPECT_EQ(HdpGroupCount(HdpOptions(7), 64, 100000), 7);
  EXPECT_EQ(HdpGroupCount(HdpOptions(), 3, 12), 12);  // no more groups than units...
  EXPECT_EQ(HdpGroupCount(HdpOptions(), 8, 5), 8);    // ...nor fewer than devices
}

TEST(HdpPolicyTest, SampledLogProbabilitiesEqualScoredOnesPartByPart) {
  Problem p(ConstrainedGraph());
  auto policy = MakePolicy(p, HdpOptions());
  EXPECT_EQ(policy->num_units(), 11);
  auto pass = policy->Begin();
  torch::Generator gen = Seeded(5);
  PolicySamples sampled;
  HdpLogProbs sampled_parts;
  {
    torch::NoGradGuard no_grad;
    sampled = pass->Sample(6, gen, {});
    sampled_parts = Parts(*pass);
  }
  ASSERT_EQ(sampled.decisions.size(), 6u);
  ASSERT_EQ(sampled.decisions[0].size(), 11u + 11u);  // a group per unit, then a device per group (11: no more groups than units)
  PolicySamples scored = pass->Score(sampled.decisions);
  const HdpLogProbs& scored_parts = Parts(*pass);
  EXPECT_TRUE(torch::allclose(sampled_parts.grouping, scored_parts.grouping.detach(), 1e-5, 1e-4))
      << sampled_parts.grouping << scored_parts.grouping;
  EXPECT_TRUE(torch::allclose(sampled_parts.placement, scored_parts.placement.detach(), 1e-5, 1e-4))
      << sampled_parts.placement << scored_parts.placement;
  EXPECT_TRUE(torch::allclose(sampled.log_prob, scored.log_prob.detach(), 1e-5, 1e-4));
  EXPECT_TRUE(torch::allclose(sampled.entropy, scored.entropy.detach(), 1e-4, 1e-3));
  EXPECT_TRUE(torch::allclose(scored.log_prob, scored_parts.grouping + scored_parts.placement));
  // The placer starts uniform over the 3 devices (zero output layer), but
  // its stay bias makes repeats likelier: the placement part is not that of
  // a uniform draw, and the grouping part is of 11 draws over 60 groups.
  EXPECT_LT(sampled_parts.grouping.max().item<double>(), 0);
  EXPECT_LT(sampled_parts.placement.max().item<double>(), 0);

  // Another controller's pass over the same parameters agrees as well.
  auto fresh = policy->Begin();
  EXPECT_TRUE(torch::allclose(fresh->Score(sampled.decisions).log_prob.detach(), sampled.log_prob, 1e-5, 1e-4));
}

TEST(HdpPolicyTest, ScoreOfOtherDecisionsDiffersAndBothHalvesGetGradients) {
  Problem p(ConstrainedGraph());
  auto policy = MakePolicy(p, HdpOptions(8));
  torch::Generator gen = Seeded(9);
  PolicySamples sampled;
  {
    torch::NoGradGuard no_grad;
    sampled = policy->Begin()->Sample(4, gen, {});
  }
  PolicySamples scored = policy->Begin()->Score(sampled.decisions);
  scored.log_prob.sum().backward();
  std::map<std::string, double> grad_norm;
  for (const auto& item : policy->module().named_parameters()) {
    if (item.value().grad().defined()) grad_norm[item.key()] = item.value().grad().norm().item<double>();
  }
  EXPECT_GT(grad_norm["grouper_output.weight"], 0);  // log p(grouping)
  EXPECT_GT(grad_norm["output.bias"], 0);            // log p(placement | grouping)
  EXPECT_GT(grad_norm["stay_bias"], 0);
}

TEST(HdpPolicyTest, EverySampledPlacementKeepsCoLocationAndDeviceKinds) {
  Problem p(ConstrainedGraph());
  auto policy = MakePolicy(p, HdpOptions(4));
  auto pass = policy->Begin();
  torch::Generator gen = Seeded(1);
  torch::NoGradGuard no_grad;
  std::set<int32_t> devices_of_op7, devices_of_op4;
  for (const SampleOptions& options : {SampleOptions{}, SampleOptions{.logit_noise_std = 3.0}, SampleOptions{.greedy = true}}) {
    PolicySamples s = pass->Sample(64, gen, options);
    for (const Decision& d : s.decisions) {
      Placement placement = policy->ToPlacement(d);
      ExpectValid(p.graph, p.cluster, placement);
      devices_of_op7.insert(placement[7]);
      devices_of_op4.insert(placement[4]);
    }
  }
  EXPECT_EQ(devices_of_op4.size(), 3u);     // unconstrained: the placer uses every device
  EXPECT_FALSE(devices_of_op7.count(0));   // GPU-only op never on the CPU
}

TEST(HdpPolicyTest, UnitsAGroupsDeviceCannotRunGoToTheFirstDeviceThatCan) {
  Problem p(ConstrainedGraph());
  auto policy = MakePolicy(p, HdpOptions(2));
  const int64_t U = policy->num_units();
  for (int32_t device = 0; device < 3; ++device) {
    Decision d(U + 2, 0);  // every unit in group 0
    d[U] = device;
    Placement placement = policy->ToPlacement(d);
    ExpectValid(p.graph, p.cluster, placement);
    for (int32_t op : {0, 10, 11}) EXPECT_EQ(placement[op], 0) << op;  // CPU-only: cpu:0
    EXPECT_EQ(placement[7], device == 0 ? 1 : device);                  // GPU-only: gpu:0 when the group is on the CPU
    EXPECT_EQ(placement[4], device);
  }
}

// A random placement that keeps co-location and kinds: each unit's ops on one allowed device.
Placement RandomValidPlacement(const Graph& graph, const Cluster& cluster, std::mt19937& rng) {
  OpFeatures f = BuildOpFeatures(graph, cluster);
  std::vector<int32_t> unit_device(f.num_units);
  for (int32_t u = 0; u < f.num_units; ++u) {
    std::vector<int32_t> allowed;
    for (int32_t d = 0; d < cluster.num_devices(); ++d) {
      if (f.unit_kinds[u] & MaskOf(cluster.devices[d].kind)) allowed.push_back(d);
    }
    unit_device[u] = allowed[rng() % allowed.size()];
  }
  Placement placement(graph.num_ops());
  for (int32_t op = 0; op < graph.num_ops(); ++op) placement[op] = unit_device[f.unit_of_op[op]];
  return placement;
}

TEST(HdpPolicyTest, TheLocalityPriorAloneGroupsStretchesOfTheNetworkInOrder) {
  // With the prior on, the Grouper's network starts silent: its greedy
  // grouping puts each unit in the group whose stretch holds its position,
  // so groups follow the network in the Placer's reading order.
  Problem p(TrainingChain());
  OpFeatures f = BuildOpFeatures(p.graph, p.cluster);
  for (int32_t groups : {2, 4, 8}) {
    auto policy = MakePolicy(p, HdpOptions(groups));
    torch::Generator generator = Seeded(1);
    SampleOptions greedy;
    greedy.greedy = true;
    Decision d = policy->Begin()->Sample(1, generator, greedy).decisions.at(0);
    for (int32_t u = 0; u < f.num_units; ++u) {
      EXPECT_EQ(d[u], static_cast<int32_t>(f.unit_position[u] * groups)) << "unit " << u << ", " << groups << " groups";
    }
  }
  // Without it (the paper's Grouper) the random network decides: not this grouping.
  LearnedOptions paper = HdpOptions(8);
  paper.hdp.grouper_locality = 0;
  auto policy = MakePolicy(p, paper);
  torch::Generator generator = Seeded(1);
  SampleOptions greedy;
  greedy.greedy = true;
  Decision d = policy->Begin()->Sample(1, generator, greedy).decisions.at(0);
  bool all_in_their_stretch = true;
  for (int32_t u = 0; u < f.num_units; ++u) all_in_their_stretch &= d[u] == static_cast<int32_t>(f.unit_position[u] * 8);
  EXPECT_FALSE(all_in_their_stretch);
}

TEST(HdpPolicyTest, ImitatingAValidPlacementReproducesIt) {
  Problem p(ConstrainedGraph());
  std::mt19937 rng(4);
  for (int32_t groups : {0, 3, 5}) {
    auto policy = MakePolicy(p, HdpOptions(groups));
    for (int trial = 0; trial < 20; ++trial) {
      Placement placement = RandomValidPlacement(p.graph, p.cluster, rng);
      Decision d = policy->Imitate(placement);
      EXPECT_EQ(policy->ToPlacement(d), placement) << "groups " << groups;
      EXPECT_NO_THROW(policy->Begin()->Score({d}));
    }
  }
}

TEST(HdpPolicyTest, ImitatingWithFewerGroupsThanDevicesStillGivesAValidDecision) {
  Problem p(ConstrainedGraph());
  auto policy = MakePolicy(p, HdpOptions(2));
  std::mt19937 rng(6);
  Decision d = policy->Imitate(RandomValidPlacement(p.graph, p.cluster, rng));
  ExpectValid(p.graph, p.cluster, policy->ToPlacement(d));
  EXPECT_TRUE(torch::isfinite(policy->Begin()->Score({d}).log_prob).all().item<bool>());
}

TEST(HdpPolicyTest, GreedyIsDeterministicAndTheSameSeedGivesTheSameSamples) {
  Problem p(ConstrainedGraph());
  LearnedOptions options = HdpOptions();
  options.hdp.grouper_noise_std = 0.5;
  options.hdp.grouper_noise_steps = 10;
  torch::NoGradGuard no_grad;
  auto a = MakePolicy(p, options, 7);
  auto b = MakePolicy(p, options, 7);
  auto pass_a = a->Begin();
  auto pass_b = b->Begin();
  torch::Generator gen_a = Seeded(11), gen_b = Seeded(11), gen_c = Seeded(12);
  // Grouper noise on (step 0) and off (step 10), same seeds.
  for (int64_t step : {0, 10}) {
    PolicySamples sa = pass_a->Sample(5, gen_a, {.step = step});
    PolicySamples sb = pass_b->Sample(5, gen_b, {.step = step});
    EXPECT_EQ(sa.decisions, sb.decisions);
    EXPECT_TRUE(torch::equal(sa.log_prob, sb.log_prob));
    EXPECT_NE(pass_a->Sample(5, gen_c, {.step = step}).decisions, sa.decisions);
  }
  PolicySamples g1 = pass_a->Sample(3, gen_a, {.greedy = true, .step = 10});
  PolicySamples g2 = pass_a->Sample(3, gen_c, {.greedy = true, .step = 10});
  EXPECT_EQ(g1.decisions, g2.decisions);
  EXPECT_EQ(g1.decisions[0], g1.decisions[2]);
}

TEST(HdpPolicyTest, SiblingHasTheSameShapes) {
  Problem p(ConstrainedGraph());
  auto policy = MakePolicy(p, HdpOptions());
  auto sibling = policy->MakeSibling();
  EXPECT_EQ(sibling->num_units(), policy->num_units());
  auto mine = policy->module().named_parameters();
  auto theirs = sibling->module().named_parameters();
  ASSERT_EQ(mine.size(), theirs.size());
  for (const auto& item : mine) EXPECT_EQ(item.value().sizes(), theirs[item.key()].sizes()) << item.key();
}

TEST(HdpPolicyTest, MalformedDecisionsAreErrors) {
  Problem p(ConstrainedGraph());
  auto policy = MakePolicy(p, HdpOptions(4));
  const int64_t size = policy->num_units() + 4;
  Decision short_one(size - 1, 0), bad_group(size, 0), bad_device(size, 0);
  bad_group[0] = 4;
  bad_device[size - 1] = 3;
  for (const Decision& d : {short_one, bad_group, bad_device}) {
    EXPECT_THROW(policy->ToPlacement(d), Error);
    EXPECT_THROW(policy->Begin()->Score({d}), Error);
  }
  LearnedOptions bad = HdpOptions();
  bad.hdp.grouper_hidden = 0;
  EXPECT_THROW(MakePolicy(p, bad), Error);
}

}  // namespace
}  // namespace devplace

