// A training step samples and then scores the same decisions on one pass;
// the sequence policies (rl, hdp, mars) keep the decoder states sampling
// computed and score from them. What is checked for each: scoring from the
// kept states gives the log-probabilities, entropies and gradients a fresh
// pass gives the same decisions (up to float rounding), also for a subset
// (the cut-over keeps only the placements that ran) and with noisy logits;
// a second Score on the pass, or decisions that were not sampled, are
// scored afresh.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "learned/learned_placer.h"
#include "learned/methods.h"
#include "learned/policies/policy.h"
#include "models/synthetic.h"
#include "placement_problem.h"
#include "test_util.h"

namespace devplace {
namespace {

using Problem = testing::OwnedProblem;

torch::Generator Seeded(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

std::vector<torch::Tensor> Gradients(Policy& policy, const torch::Tensor& loss) {
  policy.module().zero_grad();
  loss.backward();
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& p : policy.module().parameters()) {
    out.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  }
  return out;
}

void ExpectClose(const torch::Tensor& a, const torch::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const double scale = std::max(1.0, b.abs().max().item<double>());
  EXPECT_LE((a - b).abs().max().item<double>(), 1e-4 * scale) << what;
}

class KeptStatesTest : public ::testing::TestWithParam<const char*> {
 protected:
  LearnedOptions Options() const {
    LearnedOptions options;
    options.method = GetParam();
    options.seed = 5;
    return options;
  }
};

TEST_P(KeptStatesTest, ScoringFromKeptStatesEqualsAFreshPass) {
  Problem p(MakeSyntheticGraph(SyntheticOptions{.num_ops = 120, .width = 2}), testing::MakeSlowCpuCluster());
  torch::manual_seed(3);
  std::unique_ptr<Policy> policy = MakePolicy(p.get(), Options());
  for (double noise : {0.0, 1.0}) {
    torch::Generator generator = Seeded(7);
    SampleOptions sampling;
    sampling.will_score = true;
    sampling.logit_noise_std = noise;
    std::unique_ptr<PolicyPass> kept = policy->Begin();
    const PolicySamples sampled = kept->Sample(6, generator, sampling);
    // What the cut-over would keep: some of them, in order.
    const std::vector<Decision> some = {sampled.decisions[0], sampled.decisions[2], sampled.decisions[3], sampled.decisions[5]};
    const PolicySamples from_kept = kept->Score(some);
    const PolicySamples fresh = policy->Begin()->Score(some);
    const std::string label = std::string(GetParam()) + " noise " + std::to_string(noise);
    ExpectClose(from_kept.log_prob.detach(), fresh.log_prob.detach(), label + " log_prob");
    ExpectClose(from_kept.entropy.detach(), fresh.entropy.detach(), label + " entropy");
    const std::vector<torch::Tensor> kept_grads = Gradients(*policy, (from_kept.log_prob * torch::arange(1, 5)).sum());
    const std::vector<torch::Tensor> fresh_grads = Gradients(*policy, (fresh.log_prob * torch::arange(1, 5)).sum());
    ASSERT_EQ(kept_grads.size(), fresh_grads.size());
    double largest = 0;
    for (size_t i = 0; i < kept_grads.size(); ++i) {
      ExpectClose(kept_grads[i], fresh_grads[i], label + " gradient of parameter " + std::to_string(i));
      largest = std::max(largest, fresh_grads[i].abs().max().item<double>());
    }
    EXPECT_GT(largest, 0) << label;  // the gradients compared are not all zero
    // Without noise, the sampled log-probabilities are the scored ones.
    if (noise == 0) {
      ExpectClose(sampled.log_prob.index_select(0, torch::tensor(std::vector<int64_t>{0, 2, 3, 5})), fresh.log_prob.detach(),
                  label + " sampled log_prob");
    }
    // The kept states serve one Score: a second one (batch training scores
    // its first pass twice) runs the decoder again.
    const PolicySamples again = kept->Score(some);
    ExpectClose(again.log_prob.detach(), fresh.log_prob.detach(), label + " second score");
  }
}

TEST_P(KeptStatesTest, DecisionsThatWereNotSampledAreScoredAfresh) {
  Problem p(MakeSyntheticGraph(SyntheticOptions{.num_ops = 120, .width = 2}), testing::MakeSlowCpuCluster());
  torch::manual_seed(3);
  std::unique_ptr<Policy> policy = MakePolicy(p.get(), Options());
  torch::Generator generator = Seeded(7);
  SampleOptions sampling;
  sampling.will_score = true;
  std::unique_ptr<PolicyPass> kept = policy->Begin();
  const PolicySamples sampled = kept->Sample(3, generator, sampling);
  const std::vector<Decision> other = policy->Begin()->Sample(3, generator, SampleOptions()).decisions;
  // In another order than sampled, and not sampled at all.
  const std::vector<Decision> reversed = {sampled.decisions[2], sampled.decisions[0]};
  const std::vector<Decision> mixed = {sampled.decisions[0], other[1]};
  for (const auto& decisions : {reversed, mixed}) {
    std::unique_ptr<PolicyPass> pass = policy->Begin();
    generator = Seeded(7);
    pass->Sample(3, generator, sampling);
    ExpectClose(pass->Score(decisions).log_prob.detach(), policy->Begin()->Score(decisions).log_prob.detach(), GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, KeptStatesTest, ::testing::Values("rl", "hdp", "mars"),
                         [](const auto& info) { return std::string(info.param); });

TEST(RowsOfSampledTest, MatchesInOrderAndRefusesWhatIsNotThere) {
  const std::vector<Decision> sampled = {{0, 1}, {1, 1}, {0, 1}, {2, 0}};
  EXPECT_EQ(RowsOfSampled({{0, 1}, {0, 1}, {2, 0}}, sampled), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(RowsOfSampled({{1, 1}, {2, 0}}, sampled), (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(RowsOfSampled({{2, 0}, {0, 1}}, sampled).empty());  // out of order
  EXPECT_TRUE(RowsOfSampled({{1, 0}}, sampled).empty());          // never sampled
  EXPECT_TRUE(RowsOfSampled({{0, 1}, {0, 1}, {0, 1}}, sampled).empty());  // more often than sampled
}

}  // namespace
}  // namespace devplace
