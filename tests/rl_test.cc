#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <sstream>

#include "models/synthetic.h"
#include "placers/placer.h"
#include "rl/group_features.h"
#include "rl/rl_placer.h"
#include "rl/seq2seq_policy.h"
#include "test_util.h"
#include "util/error.h"

namespace devplace {
namespace {

using testing::MakeDevice;
using testing::MakeOp;
using testing::TempDir;

// A slow CPU and two GPUs, all linked.

// `chains` independent chains of three 10 ms ops, each chain one group.
Graph Chains(int chains) {
  Graph g;
  int64_t id = 0;
  for (int c = 0; c < chains; ++c) {
    int32_t prev = -1;
    for (int i = 0; i < 3; ++i) {
      int32_t op = g.AddOp(MakeOp(id++, "chain" + std::to_string(c) + "/op" + std::to_string(i), 1e10, 1000));
      if (prev >= 0) g.AddDataEdge(prev, 0, op);
      prev = op;
    }
  }
  g.Finalize("chains");
  return g;
}

struct Problem {
  Graph graph;
  Cluster cluster;
  CostModel cost;
  Simulator simulator;
  Problem(Graph g, Cluster c)
      : graph(std::move(g)), cluster(std::move(c)), cost(cluster, {}, testing::PerfectEfficiency()), simulator(graph, cluster, cost) {}
  PlacementProblem get(uint64_t seed = 0) { return {graph, cluster, cost, simulator, seed}; }
};

// What a policy reads: a 120-op synthetic graph's groups on the slow-CPU cluster.
struct PolicyInputs {
  Graph graph = MakeSyntheticGraph(SyntheticOptions{.num_ops = 120, .width = 2});
  Cluster cluster = testing::MakeSlowCpuCluster();
  Grouping grouping = BuildGrouping(graph);
  GroupFeatures features = BuildGroupFeatures(graph, grouping, cluster);
};

TEST(Seq2SeqPolicyTest, SampledLogProbabilitiesEqualRecomputedOnes) {
  PolicyInputs in;
  torch::manual_seed(3);
  Seq2SeqPolicy policy(in.features, in.cluster.num_devices(), Seq2SeqOptions{});
  torch::Generator generator = at::make_generator<at::CPUGeneratorImpl>(5);
  Seq2SeqPolicyImpl::Samples sampled;
  {
    torch::NoGradGuard no_grad;
    sampled = policy->Sample(6, generator);
  }
  Seq2SeqPolicyImpl::Samples scored = policy->Score(sampled.devices);
  ASSERT_EQ(scored.log_prob.size(0), 6);
  EXPECT_TRUE(torch::allclose(sampled.log_prob, scored.log_prob.detach(), 1e-4, 1e-3))
      << sampled.log_prob << scored.log_prob;
  EXPECT_TRUE(torch::allclose(sampled.entropy, scored.entropy.detach(), 1e-4, 1e-3));
  // Log-probabilities are of whole placements: negative, and finite.
  EXPECT_LT(scored.log_prob.max().item<float>(), 0.0f);
  EXPECT_TRUE(torch::isfinite(scored.log_prob).all().item<bool>());
  // The CPU-only input group never lands on a GPU.
  int32_t input_group = in.grouping.group_of_op[in.graph.FindOp("input/batch")];
  for (const auto& placement : sampled.devices) EXPECT_EQ(placement[input_group], 0);
}

TEST(Seq2SeqPolicyTest, StayBiasKeepsTheProbabilitiesConsistentAndMakesRuns) {
  PolicyInputs in;
  auto switches = [&](double stay_bias) {
    torch::manual_seed(3);
    Seq2SeqOptions policy_options;
    policy_options.stay_bias = stay_bias;
    Seq2SeqPolicy policy(in.features, in.cluster.num_devices(), policy_options);
    torch::Generator generator = at::make_generator<at::CPUGeneratorImpl>(5);
    Seq2SeqPolicyImpl::Samples sampled;
    {
      torch::NoGradGuard no_grad;
      sampled = policy->Sample(8, generator);
    }
    // Sampling and scoring agree with the bias as without it.
    Seq2SeqPolicyImpl::Samples scored = policy->Score(sampled.devices);
    EXPECT_TRUE(torch::allclose(sampled.log_prob, scored.log_prob.detach(), 1e-4, 1e-3));
    int count = 0;
    for (const auto& placement : sampled.devices) {
      for (size_t g = 1; g < placement.size(); ++g) count += placement[g] != placement[g - 1];
    }
    return count;
  };
  // Uniform at the start, the policy switches devices about two times in
  // three; a strong bias makes long runs (only groups that cannot stay, like
  // the CPU-only input, force a switch).
  const int uniform = switches(0.0);
  const int sticky = switches(6.0);
  EXPECT_GT(uniform, 8 * static_cast<int>(in.grouping.num_groups()) / 3);
  EXPECT_LT(sticky, uniform / 10);
}

TEST(ReinforceTest, FindsTheClearlyBestPlacementOfATinyGraph) {
  // Four 30 ms chains: two per GPU is best (60 ms); anything on the slow
  // CPU or three chains on one GPU is much worse.
  Problem p(Chains(4), testing::MakeSlowCpuCluster());
  RlOptions options;
  options.max_steps = 150;
  options.seed = 7;
  options.samples_per_step = 4;
  options.worker_threads = 1;
  double last_mean = 0;
  RlResult result = TrainRlPlacer(p.get(), options, [&](const RlProgress& progress) { last_mean = progress.mean_step_time_s; });
  EXPECT_NEAR(result.best_step_time_s, 0.060, 0.0005);
  // The policy itself converged there, not just one lucky sample.
  EXPECT_NEAR(last_mean, 0.060, 0.0005);
  EXPECT_EQ(result.steps, 150);
  EXPECT_EQ(result.samples, 600);
}

// The curve without its wall-clock column, which differs between runs.
std::string CurveWithoutTimes(const std::string& path) {
  std::ifstream in(path);
  std::string line, out;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string field;
    int column = 0;
    while (std::getline(fields, field, ',')) {
      if (column++ != 1) out += field + ",";
    }
    out += "\n";
  }
  return out;
}

TEST(ReinforceTest, ResumingFromACheckpointContinuesExactlyAsAnUninterruptedRun) {
  Problem p(Chains(5), testing::MakeSlowCpuCluster());
  TempDir dir;
  RlOptions options;
  options.seed = 11;
  options.worker_threads = 2;
  options.checkpoint_every = 5;
  options.logit_noise_std = 0.5;  // the generator's state must survive too
  options.logit_noise_steps = 100;

  RlOptions whole = options;
  whole.max_steps = 24;
  whole.out_dir = dir.File("whole");
  RlResult uninterrupted = TrainRlPlacer(p.get(), whole);

  // A run killed after step 12 whose last checkpoint was step 10: the
  // checkpoint holds step 10, the curve has rows past it.
  RlOptions ten = options;
  ten.max_steps = 10;
  ten.out_dir = dir.File("split");
  TrainRlPlacer(p.get(), ten);
  std::ofstream(dir.File("split/curve.csv"), std::ios::app) << "11,9,44,0.1,0.1,0,1,0.001\n12,9,48,0.1,0.1,0,1,0.001\n";

  RlOptions rest = options;
  rest.max_steps = 24;
  rest.out_dir = dir.File("split");
  rest.resume = true;
  RlResult resumed = TrainRlPlacer(p.get(), rest);

  EXPECT_EQ(resumed.steps, 24);
  EXPECT_EQ(resumed.samples, uninterrupted.samples);
  EXPECT_EQ(resumed.best_placement, uninterrupted.best_placement);
  EXPECT_DOUBLE_EQ(resumed.best_step_time_s, uninterrupted.best_step_time_s);
  EXPECT_EQ(CurveWithoutTimes(dir.File("split/curve.csv")), CurveWithoutTimes(dir.File("whole/curve.csv")));
}

TEST(ReinforceTest, AfterTheCutoverFailingPlacementsNeverUpdateThePolicy) {
  // GPUs too small for a chain's activations half the time: some samples
  // fail, some run.
  Graph g = Chains(3);
  for (int32_t op = 0; op < g.num_ops(); ++op) g.mutable_op(op).persistent_bytes = 400;
  g.Finalize();
  Problem p(std::move(g), testing::MakeSlowCpuCluster(/*gpu_memory_bytes=*/3000));
  RlOptions options;
  options.max_steps = 30;
  options.cutover_step = 10;
  options.samples_per_step = 6;
  options.worker_threads = 1;
  options.seed = 5;
  int64_t checked_after = 0, saw_failures_before = 0;
  TrainRlPlacer(p.get(), options, [&](const RlProgress& progress) {
    int32_t ran = static_cast<int32_t>(std::lround(6 * (1 - progress.failed_fraction)));
    if (progress.step <= 10) {
      EXPECT_EQ(progress.samples_used, 6);  // before: every sample counts
      saw_failures_before += ran < 6;
    } else {
      EXPECT_EQ(progress.samples_used, ran) << "step " << progress.step;
      ++checked_after;
    }
  });
  EXPECT_EQ(checked_after, 20);
  EXPECT_GT(saw_failures_before, 0);  // the setup does produce failures
}

TEST(ReinforceTest, WhenNothingEverRunsThereIsNoBestPlacement) {
  Graph g = Chains(2);
  g.mutable_op(0).persistent_bytes = 1'000'000'000'000;  // fits nowhere
  g.Finalize();
  Problem p(std::move(g), testing::MakeSlowCpuCluster());
  RlOptions options;
  options.max_steps = 5;
  options.cutover_step = 0;
  options.worker_threads = 1;
  RlResult result = TrainRlPlacer(p.get(), options, [](const RlProgress& progress) {
    EXPECT_EQ(progress.samples_used, 0);
    EXPECT_DOUBLE_EQ(progress.failed_fraction, 1.0);
  });
  EXPECT_TRUE(result.best_placement.empty());
}

TEST(ReinforceTest, WarmStartBeginsFromTheBaseline) {
  Problem p(Chains(4), testing::MakeSlowCpuCluster());
  RlOptions options;
  options.max_steps = 1;
  options.warm_start = "m_etf";
  options.warm_start_steps = 100;
  options.worker_threads = 1;
  double first_mean = 0;
  TrainRlPlacer(p.get(), options, [&](const RlProgress& progress) { first_mean = progress.mean_step_time_s; });
  EXPECT_NEAR(first_mean, 0.060, 0.001);  // m_etf's placement is the best one; the policy imitates it
}

// A warm start from "best" measures the baselines and starts the search's
// best there: even with no imitation at all, so that every sample is
// uniformly random, the run reports the fastest baseline's time or better.
TEST(ReinforceTest, WarmStartFromTheBestBaselineKeepsItsTime) {
  Problem p(Chains(4), testing::MakeSlowCpuCluster());
  double fastest_baseline_s = 1e9;
  for (const PlacerInfo& placer : ListPlacers()) {
    if (placer.name == "random") continue;
    SimResult r = p.simulator.Run(placer.place(p.get()).placement);
    if (!r.oom && !r.invalid && !r.failed) fastest_baseline_s = std::min(fastest_baseline_s, r.step_time_s());
  }
  RlOptions options;
  options.max_steps = 1;
  options.warm_start = "best";
  options.warm_start_steps = 0;
  options.worker_threads = 1;
  RlResult result = TrainRlPlacer(p.get(), options, nullptr);
  ASSERT_FALSE(result.best_placement.empty());
  EXPECT_LE(result.best_step_time_s, fastest_baseline_s + 1e-9);
}

TEST(ReinforceTest, ResumeWithoutACheckpointIsAClearError) {
  Problem p(Chains(2), testing::MakeSlowCpuCluster());
  TempDir dir;
  RlOptions options;
  options.max_steps = 1;
  options.resume = true;
  options.out_dir = dir.File("nothing");
  try {
    TrainRlPlacer(p.get(), options);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no checkpoint"), std::string::npos);
  }
}

}  // namespace
}  // namespace devplace
