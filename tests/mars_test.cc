// Mars's parts (Lan et al. 2021): the GCN encoder and its pre-training by
// Deep Graph Infomax.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>


#include "test_files.h"
#include "learned/training/batch_trainer.h"
#include "learned/files/checkpoint_file.h"
#include "learned/networks/deep_graph_infomax.h"
#include "learned/networks/mars_encoder.h"
#include "learned/training/mars_pretrainer.h"
#include "learned/methods.h"
#include "learned/policies/gdp_policy.h"
#include "learned/training/optimizer.h"
#include "cluster/presets.h"
#include "placement_problem.h"
#include "models/registry.h"
#include "util/error.h"
#include "util/files.h"
#include "learned/networks/policy_file.h"

namespace devplace {
namespace {

double Sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }
double Softplus(double z) { return std::log1p(std::exp(z)); }

// On a three-node chain with every weight set by hand, DGI's loss equals
// the value worked out with plain arithmetic from the formulas in
// learned/networks/deep_graph_infomax.h.
TEST(DeepGraphInfomaxTest, LossEqualsTheHandComputedValue) {
  GcnEncoder encoder(1, 1, 1);
  DgiDiscriminator discriminator(1);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : encoder->named_parameters()) p.value().fill_(p.key().find("prelu") != std::string::npos ? 0.25 : 1.0);
    for (auto& p : discriminator->named_parameters()) p.value().fill_(p.key().find("bias") != std::string::npos ? -0.5 : 2.0);
  }
  const torch::Tensor x = torch::tensor(std::vector<float>{1, -2, 3}).view({3, 1});
  const torch::Tensor src = torch::tensor(std::vector<int64_t>{0, 1}), dst = torch::tensor(std::vector<int64_t>{1, 2});
  const torch::Tensor shuffle = torch::tensor(std::vector<int64_t>{2, 0, 1});
  const DgiLoss got = ComputeDgiLoss(discriminator, encoder(x, src, dst), encoder(x.index_select(0, shuffle), src, dst));

  // A + I undirected: degrees 2, 3, 2.
  auto encode = [](double a, double b, double c) {
    const double r6 = std::sqrt(6.0);
    double h[3] = {a / 2 + b / r6, a / r6 + b / 3 + c / r6, b / r6 + c / 2};
    for (double& v : h) v = v > 0 ? v : 0.25 * v;  // PReLU
    return std::vector<double>{h[0], h[1], h[2]};
  };
  const std::vector<double> real = encode(1, -2, 3), corrupted = encode(3, 1, -2);
  const double s = Sigmoid((real[0] + real[1] + real[2]) / 3);
  double loss = 0;
  int right = 0;
  for (double h : real) {
    const double logit = 2.0 * h * s - 0.5;
    loss += Softplus(-logit);  // -log sigmoid(logit)
    right += logit > 0;
  }
  for (double h : corrupted) {
    const double logit = 2.0 * h * s - 0.5;
    loss += Softplus(logit);  // -log(1 - sigmoid(logit))
    right += logit <= 0;
  }
  EXPECT_NEAR(got.loss.item<double>(), loss / 6, 1e-6);
  EXPECT_DOUBLE_EQ(got.accuracy, right / 6.0);
}

// Graphs whose node features vary smoothly along their edges, as a real
// network's do (a layer's ops look alike, the next layer's differ a little).
struct SmoothGraph {
  torch::Tensor x, src, dst;
};
SmoothGraph MakeSmoothGraph(int64_t nodes, double period, int64_t skip) {
  std::vector<float> x;
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v < nodes; ++v) {
    const double t = static_cast<double>(v) / period;
    x.insert(x.end(), {static_cast<float>(std::sin(t)), static_cast<float>(std::cos(t)), static_cast<float>(t / nodes * period)});
    if (v > 0) src.push_back(v - 1), dst.push_back(v);
    if (v >= skip) src.push_back(v - skip), dst.push_back(v);
  }
  return {torch::tensor(x).view({nodes, 3}), torch::tensor(src), torch::tensor(dst)};
}

DgiLoss Dgi(GcnEncoder& encoder, DgiDiscriminator& discriminator, const SmoothGraph& g, const torch::Tensor& shuffle) {
  return ComputeDgiLoss(discriminator, encoder(g.x, g.src, g.dst), encoder(g.x.index_select(0, shuffle), g.src, g.dst));
}

// A few hundred steps of DGI on three graphs and the discriminator tells
// real nodes from corrupted ones on every one of them; every parameter
// moved (the encoder is trained through the discriminator's loss).
TEST(DeepGraphInfomaxTest, TrainingSeparatesRealFromCorruptedNodes) {
  torch::manual_seed(5);
  GcnEncoder encoder(3, 16, 2);
  DgiDiscriminator discriminator(16);
  std::vector<torch::Tensor> parameters = encoder->parameters();
  for (const torch::Tensor& p : discriminator->parameters()) parameters.push_back(p);
  std::vector<torch::Tensor> before;
  for (const torch::Tensor& p : parameters) before.push_back(p.detach().clone());
  torch::optim::Adam adam(parameters, torch::optim::AdamOptions(0.01));
  const std::vector<SmoothGraph> graphs = {MakeSmoothGraph(60, 6, 3), MakeSmoothGraph(90, 10, 5), MakeSmoothGraph(40, 4, 2)};
  torch::Generator generator = at::detail::createCPUGenerator(11);
  for (int step = 0; step < 300; ++step) {
    adam.zero_grad();
    torch::Tensor loss = torch::zeros({});
    for (const SmoothGraph& g : graphs) {
      const torch::Tensor shuffle = torch::randperm(g.x.size(0), generator, torch::kInt64);
      loss = loss + Dgi(encoder, discriminator, g, shuffle).loss;
    }
    loss.backward();
    adam.step();
  }
  torch::NoGradGuard no_grad;
  for (const SmoothGraph& g : graphs) {
    const torch::Tensor shuffle = torch::randperm(g.x.size(0), generator, torch::kInt64);
    EXPECT_GT(Dgi(encoder, discriminator, g, shuffle).accuracy, 0.9) << g.x.size(0);
  }
  for (size_t i = 0; i < parameters.size(); ++i) EXPECT_FALSE(torch::equal(parameters[i], before[i])) << i;
}

std::string Bytes(const std::string& path) { return ReadTextFile(path); }

MarsPretrainOptions SmallPretrain(const std::string& out, int64_t steps) {
  MarsPretrainOptions o;
  o.encoder_out = out;
  o.hidden = 16;
  o.layers = 2;
  o.max_steps = steps;
  o.patience = 1000;
  o.checkpoint_seconds = 0;
  o.seed = 7;
  return o;
}

void Quiet(const MarsPretrainProgress&) {}

// Pre-training is a pure function of its seed, and a run stopped and
// resumed from its checkpoint ends with the encoder file of the run that
// never stopped, byte for byte (optimiser, generator, best encoder and
// patience all travel in the checkpoint).
TEST(MarsPretrainTest, ResumedRunEqualsTheUninterruptedOne) {
  testing::TempDir folder;
  const Graph tiny = MakeModel("tiny"), rnnlm = MakeModel("rnnlm");
  const std::vector<const Graph*> graphs = {&tiny, &rnnlm};
  const MarsPretrainResult straight = PretrainMarsEncoder(graphs, SmallPretrain(folder.File("a.pt"), 24), Quiet);
  EXPECT_EQ(straight.last.step, 24);
  PretrainMarsEncoder(graphs, SmallPretrain(folder.File("b.pt"), 24), Quiet);
  EXPECT_EQ(Bytes(folder.File("a.pt")), Bytes(folder.File("b.pt"))) << "same seed, other encoder";

  PretrainMarsEncoder(graphs, SmallPretrain(folder.File("c.pt"), 10), Quiet);
  MarsPretrainOptions rest = SmallPretrain(folder.File("c.pt"), 24);
  rest.resume = true;
  const MarsPretrainResult resumed = PretrainMarsEncoder(graphs, rest, Quiet);
  EXPECT_EQ(resumed.last.step, 24);
  EXPECT_EQ(Bytes(folder.File("a.pt")), Bytes(folder.File("c.pt")));

  // Other graphs, or other sizes, do not resume it.
  MarsPretrainOptions other = rest;
  other.max_steps = 30;
  EXPECT_THROW(PretrainMarsEncoder({&rnnlm, &tiny}, other, Quiet), Error);
  other.hidden = 8;
  EXPECT_THROW(PretrainMarsEncoder(graphs, other, Quiet), Error);
}

// The loss falls, and the file holds the encoder of the best loss.
TEST(MarsPretrainTest, LossFallsAndTheFileRecordsIt) {
  testing::TempDir folder;
  const Graph inception = MakeModel("inception_v3");
  MarsPretrainOptions o = SmallPretrain(folder.File("e.pt"), 60);
  o.learning_rate = 0.003;
  std::vector<double> losses;
  const MarsPretrainResult r = PretrainMarsEncoder({&inception}, o, [&](const MarsPretrainProgress& p) { losses.push_back(p.loss); });
  ASSERT_EQ(losses.size(), 60u);
  EXPECT_NEAR(losses.front(), std::log(2.0), 0.05);  // an untrained discriminator: chance
  EXPECT_LT(r.last.best_loss, 0.85 * losses.front());
  MarsEncoderFileFacts facts;
  const MarsEncoder encoder = LoadMarsEncoderFile(o.encoder_out, &facts);
  EXPECT_EQ(facts.graphs, std::vector<std::string>{"inception_v3"});
  EXPECT_EQ(facts.steps, 60);
  EXPECT_DOUBLE_EQ(facts.loss, r.last.best_loss);
  EXPECT_EQ(encoder->architecture().hidden, 16);
}

// Rewrites the encoder file at `path` with `edit` applied to its facts,
// sealed again (so only the edit is wrong).
void EditFacts(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  CheckpointParts parts = UnsealCheckpoint(path, ReadTextFile(path), "DEVPLACE-MARS-ENCODER 1\n", "Mars encoder file");
  edit(parts.facts);
  std::ofstream(path, std::ios::binary) << SealCheckpoint(parts, "DEVPLACE-MARS-ENCODER 1\n");
}

std::string LoadError(const std::string& path) {
  try {
    LoadMarsEncoderFile(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// An encoder file of another architecture or feature vocabulary than its
// tensors or this build, damaged, or not an encoder file at all: one line
// naming the file, never a crash or an encoder that reads garbage.
TEST(MarsEncoderFileTest, OtherVocabularyArchitectureOrDamageIsOneLineError) {
  testing::TempDir folder;
  const Graph tiny = MakeModel("tiny");
  const std::string good = folder.File("good.pt");
  PretrainMarsEncoder({&tiny}, SmallPretrain(good, 3), Quiet);
  ASSERT_EQ(LoadError(good), "");
  const std::string original = Bytes(good);
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    const char* says;
  };
  const Case cases[] = {
      {"wider", [](nlohmann::json& f) { f["architecture"]["hidden"] = 32; }, "architecture"},
      {"deeper", [](nlohmann::json& f) { f["architecture"]["layers"] = 3; }, "architecture"},
      {"vocabulary", [](nlohmann::json& f) { f["architecture"]["vocabulary"].insert(f["architecture"]["vocabulary"].begin(), "ExtraOp"); },
       "architecture"},
      {"no other", [](nlohmann::json& f) { f["architecture"]["vocabulary"] = {"MatMul"}; }, "vocabulary"},
      {"features", [](nlohmann::json& f) { f["architecture"]["numeric_features"] = 3; }, "op features"},
      {"embedding", [](nlohmann::json& f) { f["architecture"]["type_embedding"] = 8; }, "op features"},
      {"no hidden", [](nlohmann::json& f) { f["architecture"].erase("hidden"); }, "hidden"},
  };
  for (const Case& c : cases) {
    std::ofstream(good, std::ios::binary) << original;
    EditFacts(good, c.edit);
    const std::string error = LoadError(good);
    EXPECT_NE(error.find(good), std::string::npos) << c.what << ": " << error;
    EXPECT_NE(error.find(c.says), std::string::npos) << c.what << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << c.what;
  }
  std::string damaged = original;
  damaged[damaged.size() / 2] ^= 0x5a;
  std::ofstream(good, std::ios::binary) << damaged;
  EXPECT_NE(LoadError(good).find(good), std::string::npos);
  std::ofstream(good, std::ios::binary) << "{\"not\": \"an encoder\"}";
  EXPECT_NE(LoadError(good).find(good), std::string::npos);
  EXPECT_NE(LoadError(folder.File("missing.pt")), "");
}

LearnedOptions MarsOptions(int64_t segment) {
  LearnedOptions o;
  o.method = "mars";
  o.algorithm = "ppo";
  o.mars.hidden = 16;
  o.mars.segment = segment;
  o.mars.encoder_hidden = 16;
  return o;
}

// The placer samples unit by unit, attending within each unit's segment,
// and scores given decisions in one teacher-forced pass with the segments
// batched: both must give every decision the same log-probability, across
// segment boundaries (segments of 3 and 4 units on a graph of 14, the
// last segment short) and with or without a start placement.
TEST(MarsPlacerTest, SampledLogProbabilitiesEqualTheRecomputedOnesAcrossSegments) {
  testing::OwnedProblem problem(MakeModel("tiny"), *MakeClusterPreset("k80x2"));
  for (int64_t segment : {int64_t{3}, int64_t{4}, int64_t{1000}}) {
    torch::manual_seed(3);
    std::unique_ptr<Policy> policy = MakePolicy(problem.get(), MarsOptions(segment));
    if (segment < 1000) ASSERT_GT(policy->num_units(), 3 * segment) << "the graph must span several segments, the last one short";
    if (segment < 1000) ASSERT_NE(policy->num_units() % segment, 0);
    // Move the policy off uniform so the check means something.
    {
      torch::NoGradGuard no_grad;
      for (torch::Tensor& p : policy->module().parameters()) p.add_(torch::randn(p.sizes()) * 0.3);
    }
    const std::vector<Decision> probes = policy->StartProbes();
    std::vector<double> times(probes.size(), std::numeric_limits<double>::infinity());
    times.back() = 1.0;  // the last probe becomes the start
    policy->ChooseStart(times);
    auto generator = at::make_generator<at::CPUGeneratorImpl>(11);
    std::unique_ptr<PolicyPass> pass = policy->Begin();
    const PolicySamples sampled = pass->Sample(6, generator, SampleOptions{});
    const PolicySamples scored = pass->Score(sampled.decisions);
    ASSERT_EQ(sampled.log_prob.size(0), 6);
    EXPECT_TRUE(torch::allclose(sampled.log_prob, scored.log_prob.detach(), 1e-4, 1e-4))
        << "segment " << segment << ": " << sampled.log_prob << " vs " << scored.log_prob;
    EXPECT_TRUE(torch::allclose(sampled.entropy, scored.entropy.detach(), 1e-4, 1e-3)) << "segment " << segment;
    SampleOptions greedy;
    greedy.greedy = true;
    const PolicySamples best = pass->Sample(1, generator, greedy);
    EXPECT_TRUE(torch::allclose(best.log_prob, pass->Score(best.decisions).log_prob.detach(), 1e-4, 1e-4));
    EXPECT_GE(best.log_prob.item<double>(), sampled.log_prob.max().item<double>() - 1e-4) << "the greedy decision is the likeliest";
  }
}

// Trains a Mars policy on `problem` for a few updates of a made-up
// advantage through the optimiser the training loop uses; returns the
// encoder's and the placer's parameters before and after.
struct Snapshot {
  std::vector<torch::Tensor> encoder, placer;
};
Snapshot TakeSnapshot(torch::nn::Module& module) {
  Snapshot s;
  for (const auto& p : module.named_parameters()) {
    (p.key().find("encoder.") != std::string::npos ? s.encoder : s.placer).push_back(p.value().detach().clone());
  }
  return s;
}
bool AllEqual(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

void TrainFewUpdates(Policy& policy, const LearnedOptions& options) {
  std::unique_ptr<torch::optim::Adam> optimizer = MakePolicyOptimizer(policy, options);
  auto generator = at::make_generator<at::CPUGeneratorImpl>(5);
  for (int update = 0; update < 3; ++update) {
    std::unique_ptr<PolicyPass> pass = policy.Begin();
    const PolicySamples s = pass->Sample(4, generator, SampleOptions{});
    const torch::Tensor advantage = torch::tensor(std::vector<float>{1, -1, 0.5, -0.5});
    optimizer->zero_grad();
    (-(pass->Score(s.decisions).log_prob * advantage).sum()).backward();
    optimizer->step();
  }
}

// With --mars-encoder-learning-rate 0 the (pre-trained) encoder's weights
// are bit-identical after training while the placer's move; with a rate,
// the encoder is fine-tuned too.
TEST(MarsPlacerTest, FreezingTheEncoderLeavesItsWeightsBitIdentical) {
  testing::OwnedProblem problem(MakeModel("tiny"), *MakeClusterPreset("k80x2"));
  testing::TempDir folder;
  const std::string encoder = folder.File("encoder.pt");
  MarsPretrainOptions pretrain = SmallPretrain(encoder, 5);
  PretrainMarsEncoder({&problem.graph}, pretrain, Quiet);
  for (double rate : {0.0, 0.01}) {
    LearnedOptions options = MarsOptions(5);
    options.unit.encoder_file = encoder;
    options.unit.encoder_learning_rate = rate;
    options.learning_rate = 0.01;
    torch::manual_seed(1);
    std::unique_ptr<Policy> policy = MakePolicy(problem.get(), options);
    const Snapshot before = TakeSnapshot(policy->module());
    ASSERT_FALSE(before.encoder.empty());
    EXPECT_TRUE(AllEqual(before.encoder, TakeSnapshot(*LoadMarsEncoderFile(encoder)).placer))
        << "the policy starts from the file's encoder";
    TrainFewUpdates(*policy, options);
    const Snapshot after = TakeSnapshot(policy->module());
    EXPECT_FALSE(AllEqual(before.placer, after.placer)) << "rate " << rate;
    EXPECT_EQ(AllEqual(before.encoder, after.encoder), rate == 0) << "rate " << rate;
  }
}

// Mars placed end to end by the training loop, with a pre-trained encoder
// or a fresh one: never slower than the fastest start probe, the same seed
// the same placement.
TEST(MarsPlacerTest, TheLoopPlacesWithAndWithoutAPretrainedEncoderDeterministically) {
  testing::OwnedProblem problem(MakeModel("tiny"), *MakeClusterPreset("k80x2"));
  testing::TempDir folder;
  const std::string encoder = folder.File("encoder.pt");
  PretrainMarsEncoder({&problem.graph}, SmallPretrain(encoder, 5), Quiet);
  for (const std::string& file : {std::string(), encoder}) {
    LearnedOptions options = MarsOptions(8);
    options.unit.encoder_file = file;
    options.max_steps = 3;
    options.samples_per_step = 4;
    const LearnedResult a = TrainLearnedPlacer(problem.get(), options);
    const LearnedResult b = TrainLearnedPlacer(problem.get(), options);
    EXPECT_EQ(a.best_placement, b.best_placement) << file;
    EXPECT_GT(a.best_step_time_s, 0) << file;
    EXPECT_LE(a.best_step_time_s, problem.simulator.Run(FindPlacer("expert").place(problem.get()).placement).step_time_s() + 1e-12) << file;
  }
  LearnedOptions other = MarsOptions(8);
  other.unit.encoder_file = folder.File("missing.pt");
  EXPECT_THROW(MakePolicy(problem.get(), other), Error);
}

// As for GDP: --start-bias beside a Mars policy file replaces the learned
// start bonus the file holds; without the flag the file's value stands.
TEST(MarsPlacerTest, AGivenStartBiasReplacesTheLoadedPolicysLearnedOne) {
  testing::OwnedProblem problem(MakeModel("tiny"), *MakeClusterPreset("k80x2"));
  testing::TempDir folder;
  BatchTrainOptions train;
  train.learned = MarsOptions(8);
  train.learned.max_steps = 1;
  train.learned.samples_per_step = 2;
  train.learned.worker_threads = 1;
  train.learned.checkpoint_seconds = 0;
  train.policy_out = folder.File("mars.pt");
  TrainAcrossGraphs({problem.get()}, train);

  LearnedOptions options = MarsOptions(8);
  options.policy_file = train.policy_out;
  const double learned = MakePolicy(problem.get(), options)->prior_parameters().at(0).item<double>();
  options.unit.start_bias.reset();  // not given (no flag): the file's value stands
  EXPECT_EQ(MakePolicy(problem.get(), options)->prior_parameters().at(0).item<double>(), learned);
  options.unit.start_bias = learned + 4;
  EXPECT_FLOAT_EQ(MakePolicy(problem.get(), options)->prior_parameters().at(0).item<double>(), learned + 4);
}

// Issue 15's question, does the pre-trained encoder help GDP: with
// --encoder, GDP's network reads the graph through the Mars encoder instead
// of GraphSAGE, starts from the file's weights, freezes it at rate 0, and
// its policy file carries the swap.
TEST(MarsPlacerTest, APretrainedEncoderReplacesGdpsGraphSage) {
  testing::OwnedProblem problem(MakeModel("tiny"), *MakeClusterPreset("k80x2"));
  testing::TempDir folder;
  const std::string encoder = folder.File("encoder.pt");
  PretrainMarsEncoder({&problem.graph}, SmallPretrain(encoder, 5), Quiet);
  LearnedOptions options;
  options.method = "gdp";
  options.gdp.network.hidden = 16;
  options.gdp.network.heads = 2;
  options.unit.encoder_file = encoder;
  options.unit.encoder_learning_rate = 0;
  options.learning_rate = 0.01;
  torch::manual_seed(1);
  GdpNet net = MakeGdpNet(options, problem.cluster.num_devices(), {&problem.graph});
  bool sage = false;
  for (const auto& p : net->named_parameters()) sage = sage || p.key().find("sage") != std::string::npos;
  EXPECT_FALSE(sage) << "GraphSAGE is replaced, not kept beside";
  ASSERT_TRUE(net->encoder());
  EXPECT_TRUE(AllEqual(TakeSnapshot(*net->encoder()).placer, TakeSnapshot(*LoadMarsEncoderFile(encoder)).placer));
  std::unique_ptr<Policy> policy = MakeGdpPolicyWithNet(problem.get(), net, options);
  const Snapshot before = TakeSnapshot(policy->module());
  TrainFewUpdates(*policy, options);
  const Snapshot after = TakeSnapshot(policy->module());
  EXPECT_TRUE(AllEqual(before.encoder, after.encoder)) << "frozen";
  EXPECT_FALSE(AllEqual(before.placer, after.placer));

  const std::string file = folder.File("gdp.pt");
  SaveGdpPolicyFile(file, net, PolicyFileFactsFor(problem.cluster, {"tiny"}, 3));
  GdpNet loaded = LoadGdpPolicyFile(file, problem.cluster);
  ASSERT_TRUE(loaded->architecture().encoder.has_value());
  EXPECT_EQ(loaded->architecture().encoder->hidden, 16);
  EXPECT_TRUE(AllEqual(TakeSnapshot(*loaded).placer, TakeSnapshot(*net).placer));
}

}  // namespace
}  // namespace devplace
