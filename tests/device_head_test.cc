// One GDP policy for any cluster (issue 50): the device-scoring head reads
// each device's features, so a policy file places on any device count,
// renaming or reordering the devices permutes its placement and nothing
// else, and training cycles one network through several clusters.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "cluster/presets.h"
#include "learned/features/device_features.h"
#include "learned/methods.h"
#include "learned/networks/gdp_net.h"
#include "learned/networks/policy_file.h"
#include "learned/policies/gdp_policy.h"
#include "learned/training/batch_trainer.h"
#include "learned/training/search_targets.h"
#include "placement_problem.h"
#include "test_files.h"
#include "test_util.h"
#include "util/error.h"

namespace devplace {
namespace {

// 24 ops in two branches that meet, op 0 CPU-only, ops 5 and 17 GPU-only,
// two ops co-located: enough for a placement to say something.
Graph BranchesGraph() {
  Graph g;
  for (int i = 0; i < 24; ++i) {
    Op op = testing::MakeOp(i, "op" + std::to_string(i), 2e6 * (1 + i % 5), 40000 * (1 + i % 3));
    op.type = i % 3 == 0 ? "Add" : (i % 3 == 1 ? "MatMul" : "Conv2D");
    op.persistent_bytes = 100000 * (i % 4);
    if (i == 0) op.device_kinds = MaskOf(DeviceKind::kCpu);
    if (i == 5 || i == 17) op.device_kinds = MaskOf(DeviceKind::kGpu);
    if (i == 7 || i == 19) op.colocation_group = "var";
    const int32_t index = g.AddOp(op);
    if (i == 1 || i == 12) g.AddDataEdge(0, 0, index);
    else if (i > 0 && i != 23) g.AddDataEdge(index - 1, 0, index);
    if (i == 23) {
      g.AddDataEdge(11, 0, index);
      g.AddDataEdge(22, 0, index);
    }
  }
  g.Finalize("branches");
  return g;
}

// Two independent chains of 8 ops, one of heavy MatMuls and one of lighter
// Conv2Ds, with small outputs: the fastest placement puts each chain on a
// GPU of its own, the heavy one on the faster. A target a network can
// learn from what it sees (op types, sizes, device speeds), unlike one
// that splits look-alike units.
Graph HeavyAndLightChains() {
  Graph g;
  for (int i = 0; i < 16; ++i) {
    const bool heavy = i < 8;
    Op op = testing::MakeOp(i, (heavy ? "heavy" : "light") + std::to_string(i), heavy ? 4e9 : 2e9, 4096);
    op.type = heavy ? "MatMul" : "Conv2D";
    const int32_t index = g.AddOp(op);
    if (i % 8 != 0) g.AddDataEdge(index - 1, 0, index);
  }
  g.Finalize("heavy_and_light");
  return g;
}

// A CPU and `gpus` GPUs, each of its own speed, memory and links, so no two
// devices are alike (a reordering is then visible in every placement).
Cluster MixedCluster(int gpus, const std::string& name = "mixed") {
  Cluster c;
  c.name = name;
  c.devices.push_back(testing::MakeDevice("cpu:0", DeviceKind::kCpu, 8'000'000'000));
  c.devices[0].peak_flops_per_s = 2e11;
  c.devices[0].memory_bandwidth_bytes_per_s = 5e10;
  for (int i = 0; i < gpus; ++i) {
    Device d = testing::MakeDevice("gpu:" + std::to_string(i), DeviceKind::kGpu, 1'000'000'000 + 250'000'000LL * i);
    d.peak_flops_per_s = 1e12 * (1.0 + 0.37 * i);
    d.memory_bandwidth_bytes_per_s = 3e11 * (1.0 + 0.21 * i);
    d.launch_overhead_us = 2 + i;
    c.devices.push_back(d);
    c.links.push_back({0, i + 1, 8e9 + 1e9 * i, 3.0 + i, -1});
  }
  for (int i = 0; i + 1 < gpus; ++i) c.links.push_back({i + 1, i + 2, 4e10 + 5e9 * i, 1.0, -1});
  c.Finalize(name);
  return c;
}

// The same cluster with its devices listed in the order `order` (new
// position p holds old device order[p]) and renamed.
Cluster Reordered(const Cluster& c, const std::vector<int32_t>& order) {
  std::vector<int32_t> position_of(order.size());
  for (size_t p = 0; p < order.size(); ++p) position_of[order[p]] = static_cast<int32_t>(p);
  Cluster out;
  out.name = c.name + "-reordered";
  for (size_t p = 0; p < order.size(); ++p) {
    out.devices.push_back(c.devices[order[p]]);
    out.devices.back().name = "renamed" + std::to_string(p * 7 + 3);
  }
  for (const Link& link : c.links) {
    Link l = link;
    l.a = position_of[link.a];
    l.b = position_of[link.b];
    out.links.push_back(l);
  }
  out.Finalize("reordered");
  return out;
}

LearnedOptions DeviceHeadOptions() {
  LearnedOptions options;
  options.method = "gdp";
  options.algorithm = "ppo";
  options.gdp.network.head = "devices";
  options.gdp.network.hidden = 16;
  options.gdp.network.heads = 2;
  return options;
}

// A fresh device-head policy for `p`'s graph, written to `path`.
void SaveFreshPolicy(const std::string& path, testing::OwnedProblem& p, uint64_t seed, const LearnedOptions& options) {
  torch::manual_seed(seed);
  GdpNet net = MakeGdpNet(options, p.cluster.num_devices(), {&p.graph});
  PolicyFileFacts facts;
  facts.cluster_name = "none";
  facts.graphs = {p.graph.name};
  SaveGdpPolicyFile(path, net, facts);
}

// What `place --policy --max-steps 0 --samples-per-step 1` keeps: the start
// probes measured, the fastest chosen as the start, then the most likely
// placement.
Placement ZeroShot(testing::OwnedProblem& p, const LearnedOptions& options) {
  std::unique_ptr<Policy> policy = MakePolicy(p.get(), options);
  std::vector<double> times;
  for (const Decision& probe : policy->StartProbes()) {
    const SimResult r = p.simulator.Run(policy->ToPlacement(probe));
    times.push_back(r.ok() ? r.step_time_s() : std::numeric_limits<double>::infinity());
  }
  policy->ChooseStart(times);
  torch::Generator generator = at::make_generator<at::CPUGeneratorImpl>(1);
  SampleOptions greedy;
  greedy.greedy = true;
  return policy->ToPlacement(policy->Begin()->Sample(1, generator, greedy).decisions[0]);
}

double StepTime(testing::OwnedProblem& p, const Placement& placement) {
  const SimResult r = p.simulator.Run(placement);
  return r.ok() ? r.step_time_s() : std::numeric_limits<double>::infinity();
}

// Device features depend on the devices, not their order or names: each
// reordered row is the original device's row.
TEST(DeviceFeaturesTest, RowsFollowTheDevicesNotTheirOrder) {
  const Graph graph = BranchesGraph();
  const Cluster c = MixedCluster(4);
  const std::vector<int32_t> order = {3, 0, 4, 2, 1};
  const Cluster r = Reordered(c, order);
  const DeviceFeatures a = BuildDeviceFeatures(c, graph, KnownDeviceFeatures());
  const DeviceFeatures b = BuildDeviceFeatures(r, graph, KnownDeviceFeatures());
  const size_t F = KnownDeviceFeatures().size();
  for (size_t p = 0; p < order.size(); ++p) {
    for (size_t f = 0; f < F; ++f) EXPECT_FLOAT_EQ(b.values[p * F + f], a.values[order[p] * F + f]) << KnownDeviceFeatures()[f];
  }
  EXPECT_THROW(BuildDeviceFeatures(c, graph, {"kind_gpu", "warp_factor"}), Error);
}

// Reordering and renaming the devices permutes the zero-shot placement
// accordingly, at the same step time, for several policies (seeds).
TEST(DeviceHeadTest, ReorderingTheDevicesPermutesTheZeroShotPlacement) {
  testing::TempDir dir;
  const std::vector<int32_t> order = {2, 4, 0, 3, 1};  // new position p holds old device order[p]
  for (uint64_t seed : {1, 2, 3}) {
    testing::OwnedProblem original(BranchesGraph(), MixedCluster(4));
    testing::OwnedProblem reordered(BranchesGraph(), Reordered(original.cluster, order));
    LearnedOptions options = DeviceHeadOptions();
    options.policy_file = dir.File("policy" + std::to_string(seed) + ".pt");
    SaveFreshPolicy(options.policy_file, original, seed, options);
    const Placement a = ZeroShot(original, options);
    const Placement b = ZeroShot(reordered, options);
    ASSERT_EQ(a.size(), b.size());
    for (size_t op = 0; op < a.size(); ++op) EXPECT_EQ(order[b[op]], a[op]) << "seed " << seed << " op " << op;
    EXPECT_NEAR(StepTime(original, a), StepTime(reordered, b), 1e-12) << "seed " << seed;
  }
}

// One policy file places the same graph on clusters of 2, 3, 5 and 9
// devices, never on a device an op cannot run on.
TEST(DeviceHeadTest, OnePolicyPlacesOnClustersOfAnyDeviceCount) {
  testing::TempDir dir;
  LearnedOptions options = DeviceHeadOptions();
  options.policy_file = dir.File("policy.pt");
  {
    testing::OwnedProblem first(BranchesGraph(), MixedCluster(2));
    SaveFreshPolicy(options.policy_file, first, 4, options);
  }
  std::vector<Cluster> clusters = {MixedCluster(1, "two"), MixedCluster(2, "three"), *MakeClusterPreset("k80x4"), *MakeClusterPreset("p100x8")};
  std::vector<int32_t> counts;
  for (const Cluster& cluster : clusters) {
    testing::OwnedProblem p(BranchesGraph(), cluster);
    counts.push_back(p.cluster.num_devices());
    std::unique_ptr<Policy> policy = MakePolicy(p.get(), options);
    torch::Generator generator = at::make_generator<at::CPUGeneratorImpl>(7);
    std::vector<Decision> decisions = policy->Begin()->Sample(16, generator, {}).decisions;
    SampleOptions greedy;
    greedy.greedy = true;
    decisions.push_back(policy->Begin()->Sample(1, generator, greedy).decisions[0]);
    for (const Decision& d : decisions) {
      const Placement placement = policy->ToPlacement(d);
      for (int32_t op = 0; op < p.graph.num_ops(); ++op) {
        ASSERT_GE(placement[op], 0);
        ASSERT_LT(placement[op], p.cluster.num_devices());
        EXPECT_TRUE(p.graph.op(op).device_kinds & MaskOf(p.cluster.devices[placement[op]].kind))
            << cluster.name << ": op " << op << " on " << p.cluster.devices[placement[op]].name;
      }
    }
  }
  EXPECT_EQ(counts, (std::vector<int32_t>{2, 3, 5, 9}));
}

std::string LoadError(const std::string& path, const Cluster& cluster) {
  try {
    LoadGdpPolicyFile(path, cluster);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A damaged device-head policy file, or one whose head reads a device
// feature this build does not compute, is a one-line error naming the file.
TEST(DeviceHeadTest, DamagedFileOrUnknownFeatureIsAOneLineError) {
  testing::TempDir dir;
  testing::OwnedProblem p(BranchesGraph(), MixedCluster(2));
  LearnedOptions options = DeviceHeadOptions();
  const std::string good = dir.File("good.pt");
  SaveFreshPolicy(good, p, 5, options);
  EXPECT_EQ(LoadError(good, MixedCluster(6)), "");

  std::string bytes = testing::ReadFile(good);
  bytes[bytes.size() / 2] ^= 0x5a;
  const std::string damaged = dir.File("damaged.pt");
  std::ofstream(damaged, std::ios::binary | std::ios::trunc) << bytes;
  const std::string damage = LoadError(damaged, p.cluster);
  EXPECT_NE(damage.find("damaged"), std::string::npos) << damage;
  EXPECT_NE(damage.find("damaged.pt"), std::string::npos) << damage;
  EXPECT_EQ(damage.find('\n'), std::string::npos) << damage;

  GdpArchitecture a = MakeGdpNet(options, 3, {&p.graph})->architecture();
  a.device_features.push_back("warp_factor");
  GdpNet future(a, 0.0);
  const std::string unknown = dir.File("future.pt");
  SaveGdpPolicyFile(unknown, future, PolicyFileFacts{});
  const std::string missing = LoadError(unknown, p.cluster);
  EXPECT_NE(missing.find("warp_factor"), std::string::npos) << missing;
  EXPECT_NE(missing.find("future.pt"), std::string::npos) << missing;
  EXPECT_EQ(missing.find('\n'), std::string::npos) << missing;
}

// Training cycles one device-head network through clusters of 3 and 5
// devices; the policy it writes places on a 9-device cluster. A fixed head
// refuses clusters of different device counts before training.
TEST(DeviceHeadTest, TrainingAcrossClustersWritesAPolicyForAnyCluster) {
  testing::TempDir dir;
  const Graph branches = BranchesGraph();
  const Graph chains = testing::Chains(3);
  GraphsAndClusters inputs;
  inputs.graphs = {&branches, &chains};
  inputs.clusters = ClusterList({MixedCluster(2, "three"), MixedCluster(4, "five")});
  inputs.cost_model = [](const Graph&, const Cluster& cluster) { return CostModel(cluster, {}, testing::PerfectEfficiency()); };
  BatchTrainOptions train;
  train.learned = DeviceHeadOptions();
  train.learned.samples_per_step = 4;
  train.learned.max_steps = 4;
  train.learned.worker_threads = 1;
  train.learned.checkpoint_seconds = 0;
  train.policy_out = dir.File("policy.pt");
  const BatchTrainResult result = TrainAcrossGraphsAndClusters(inputs, train);
  EXPECT_EQ(result.updates, 4);
  EXPECT_EQ(result.graphs.size(), 4u);  // every graph met every cluster

  testing::OwnedProblem nine(BranchesGraph(), MixedCluster(8, "nine"));
  LearnedOptions place = DeviceHeadOptions();
  place.policy_file = train.policy_out;
  const Placement placement = ZeroShot(nine, place);
  EXPECT_LT(StepTime(nine, placement), std::numeric_limits<double>::infinity());

  train.learned.gdp.network.head = "fixed";
  train.policy_out = dir.File("fixed.pt");
  try {
    TrainAcrossGraphsAndClusters(inputs, train);
    ADD_FAILURE() << "a fixed head trained on 3 and 5 devices";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fixed head"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::ifstream(train.policy_out).good());
}

// Training on --random-clusters: the source's i-th cluster is the
// generator's, the same seed visits the same (graph, cluster) pairs, and
// the policy places on a preset it never saw.
TEST(DeviceHeadTest, TrainingOnGeneratedClustersIsRepeatableAndPlacesOnAPreset) {
  testing::TempDir dir;
  const Graph branches = BranchesGraph();
  const Graph chains = testing::Chains(3);
  ClusterGeneratorOptions generator = ClusterGeneratorOptions::ForProfile(ClusterProfile::kMixed);
  generator.max_devices = 6;
  GraphsAndClusters inputs;
  inputs.graphs = {&branches, &chains};
  inputs.clusters = GeneratedClusters(generator, 11, 4);
  ASSERT_EQ(inputs.clusters->count(), 4);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(inputs.clusters->At(i).name, GenerateClusterAt(generator, 11, i).name);
  EXPECT_EQ(inputs.clusters->At(5).name, inputs.clusters->At(1).name);
  inputs.cost_model = [](const Graph&, const Cluster& cluster) { return CostModel(cluster, {}, testing::PerfectEfficiency()); };
  BatchTrainOptions train;
  train.learned = DeviceHeadOptions();
  train.learned.samples_per_step = 4;
  train.learned.max_steps = 4;
  train.learned.worker_threads = 1;
  train.learned.checkpoint_seconds = 0;
  std::vector<std::vector<std::string>> visited;
  for (const char* name : {"first.pt", "second.pt"}) {
    train.policy_out = dir.File(name);
    const BatchTrainResult result = TrainAcrossGraphsAndClusters(inputs, train);
    EXPECT_EQ(result.updates, 4);
    std::vector<std::string> pairs;
    for (const BatchGraphProgress& g : result.graphs) pairs.push_back(g.graph);
    std::sort(pairs.begin(), pairs.end());
    visited.push_back(pairs);
  }
  EXPECT_EQ(visited[0], visited[1]);
  EXPECT_EQ(visited[0].size(), 8u);  // 2 graphs x 4 clusters over 4 updates
  for (const std::string& pair : visited[0]) EXPECT_NE(pair.find("@gen-mixed-11-"), std::string::npos) << pair;

  testing::OwnedProblem preset(BranchesGraph(), *MakeClusterPreset("k80x4"));
  LearnedOptions place = DeviceHeadOptions();
  place.policy_file = dir.File("first.pt");
  EXPECT_LT(StepTime(preset, ZeroShot(preset, place)), std::numeric_limits<double>::infinity());
}

// --imitation-weighting flops: a choice counts by its ops' share of the
// FLOPs (a heavy MatMul twice a light Conv2D here), the weights sum to the
// number of choices, and weighting changes the loss; uniform is no weights.
TEST(DeviceHeadTest, ImitationWeightsFollowTheFlops) {
  testing::OwnedProblem p(HeavyAndLightChains(), MixedCluster(2));
  std::unique_ptr<Policy> policy = MakePolicy(p.get(), DeviceHeadOptions());
  EXPECT_TRUE(ChoiceWeights(p.graph, *policy, /*by_flops=*/false).empty());
  const std::vector<double> weights = ChoiceWeights(p.graph, *policy, /*by_flops=*/true);
  ASSERT_EQ(static_cast<int64_t>(weights.size()), policy->num_units());
  double sum = 0;
  for (double w : weights) sum += w;
  EXPECT_NEAR(sum, static_cast<double>(weights.size()), 1e-9);
  const std::vector<int32_t> choice_of_op = policy->ChoiceOfOp();
  ASSERT_EQ(choice_of_op.size(), 16u);
  EXPECT_NEAR(weights[choice_of_op[0]] / weights[choice_of_op[8]], (4e9 + 0.01 * 48e9 / 16) / (2e9 + 0.01 * 48e9 / 16), 1e-9);
  const Decision all_on_first(weights.size(), 1);
  torch::NoGradGuard no_grad;
  const double uniform = ImitationLoss(*policy->Begin(), all_on_first, {}).item<double>();
  EXPECT_NEAR(uniform, -policy->Begin()->Score({all_on_first}).log_prob.item<double>(), 1e-4);
  const std::vector<double> doubled(weights.size(), 2.0);
  EXPECT_NEAR(ImitationLoss(*policy->Begin(), all_on_first, doubled).item<double>(), 2 * uniform, 1e-3);
}

// Distilling search (--imitate-search): with no start bonus and no probes,
// the network alone learns to place like each training pair's search
// target, on both clusters at once: -log p(target) per unit is about half
// what the same training without the targets leaves. (A target that splits
// units the network cannot tell apart, such as the links of one chain
// alternating between two GPUs, cannot be learnt: hence a graph whose
// target follows what the network sees.)
TEST(DeviceHeadTest, ImitatingSearchTeachesTheNetworkItsTargets) {
  testing::TempDir dir;
  const Graph chains = HeavyAndLightChains();
  GraphsAndClusters inputs;
  inputs.graphs = {&chains};
  inputs.clusters = ClusterList({MixedCluster(2, "three"), MixedCluster(4, "five")});
  inputs.cost_model = [](const Graph&, const Cluster& cluster) { return CostModel(cluster, {}, testing::PerfectEfficiency()); };
  BatchTrainOptions train;
  train.learned = DeviceHeadOptions();
  train.learned.unit.start_bias = 0;
  train.learned.learning_rate = 0.003;
  train.learned.samples_per_step = 4;
  train.learned.max_steps = 60;
  train.learned.worker_threads = 1;
  train.learned.checkpoint_seconds = 0;
  constexpr int64_t kEvaluations = 300;
  // -log p(target) per unit on each cluster, for a training with and one
  // without the targets.
  std::vector<std::vector<double>> loss_per_unit;
  for (int64_t evaluations : {int64_t{0}, kEvaluations}) {
    train.imitate_search_evaluations = evaluations;
    train.policy_out = dir.File("policy" + std::to_string(evaluations) + ".pt");
    TrainAcrossGraphsAndClusters(inputs, train);
    std::vector<double> losses;
    for (int gpus : {2, 4}) {
      testing::OwnedProblem p(HeavyAndLightChains(), MixedCluster(gpus, gpus == 2 ? "three" : "five"));
      LearnedOptions alone = DeviceHeadOptions();
      alone.policy_file = train.policy_out;
      alone.unit.start_bias = 0;
      std::unique_ptr<Policy> policy = MakePolicy(p.get(train.learned.seed), alone);
      const Decision target = SearchTarget(p.get(train.learned.seed), *policy, kEvaluations);
      torch::NoGradGuard no_grad;
      losses.push_back(ImitationLoss(*policy->Begin(), target, {}).item<double>() / static_cast<double>(target.size()));
    }
    loss_per_unit.push_back(losses);
  }
  for (size_t c = 0; c < 2; ++c) {
    EXPECT_LT(loss_per_unit[1][c], 0.7 * loss_per_unit[0][c])
        << "cluster " << c << ": -log p(target) per unit " << loss_per_unit[1][c] << " imitating, " << loss_per_unit[0][c] << " not";
  }
}

}  // namespace
}  // namespace devplace
