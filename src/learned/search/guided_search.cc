#include "learned/search/guided_search.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "learned/features/move_features.h"
#include "placers/metropolis_chain.h"
#include "util/random.h"

namespace devplace {

namespace {

// A move's reward, in the chain's own units: the relative speed-up in
// percent (the Metropolis test's alpha), overflow saved in the chain's
// overflow scale, a change of tier at the bound. Bounded so that one huge
// change (into or out of memory) does not swamp what the many small ones
// teach.
constexpr double kPercent = 100;
constexpr double kMaxReward = 5;
constexpr double kBaselineDecay = 0.95;

struct MoveScorerImpl : torch::nn::Module {
  explicit MoveScorerImpl(int32_t hidden) {
    first = register_module("first", torch::nn::Linear(kMoveFeatures, hidden));
    last = register_module("last", torch::nn::Linear(hidden, 1));
    // Zero output weights: the first proposals are uniform, as mcmc's.
    torch::NoGradGuard no_grad;
    last->weight.zero_();
    last->bias.zero_();
  }
  torch::Tensor forward(const torch::Tensor& rows) { return last(torch::tanh(first(rows))).squeeze(-1); }
  torch::nn::Linear first{nullptr}, last{nullptr};
};
TORCH_MODULE(MoveScorer);

struct Candidate {
  int32_t unit;    // index into MovableUnits::units
  int32_t device;
};

// One proposal as the update reads it again: its candidates' features,
// which one was taken, and its reward.
struct Proposal {
  std::vector<MoveFeatureRow> rows;
  int32_t taken = 0;
  double reward = 0;
};

double Reward(const SearchCost& current, const SearchCost& next, double overflow_scale_bytes) {
  if (next.tier != current.tier) return next.tier < current.tier ? kMaxReward : -kMaxReward;
  double reward = 0;
  if (next.tier == SearchCost::Tier::kFits) {
    reward = kPercent * std::log(current.step_time_us / std::max(1e-9, next.step_time_us));
  } else if (next.tier == SearchCost::Tier::kOutOfMemory) {
    reward = (current.overflow_bytes - next.overflow_bytes) / overflow_scale_bytes;
  }
  return std::clamp(reward, -kMaxReward, kMaxReward);
}

torch::Tensor RowsTensor(const std::vector<MoveFeatureRow>& rows) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(rows.size()), kMoveFeatures}, torch::kFloat32);
  std::memcpy(t.data_ptr<float>(), rows.data(), rows.size() * sizeof(MoveFeatureRow));
  return t;
}

class GuidedProposer {
 public:
  GuidedProposer(const PlacementProblem& problem, const MovableUnits& movable, const GuidedSearchOptions& options)
      : movable_(movable),
        options_(options),
        context_(problem.graph, problem.cluster, problem.cost, movable.grouping),
        scorer_(options.hidden),
        optimizer_(scorer_->parameters(), torch::optim::AdamOptions(options.learning_rate)) {}

  // Draws `options.candidate_units` units uniformly, scores every move of
  // theirs to another device they can run on, and draws one move from the
  // scores' softmax mixed with the uniform share.
  Candidate Propose(const MetropolisChain& chain, Random& random) {
    candidates_.clear();
    proposal_.rows.clear();
    for (int32_t c = 0; c < options_.candidate_units; ++c) {
      const int32_t u = static_cast<int32_t>(random.Below(movable_.units.size()));
      const int32_t group = movable_.units[u];
      const int32_t from = chain.current()[movable_.grouping.groups[group].ops.front()];
      targets_.clear();
      for (int32_t d : movable_.devices_of_unit[u]) {
        if (d == from) continue;
        candidates_.push_back({u, d});
        targets_.push_back(d);
      }
      context_.AppendRows(group, targets_, chain.current(), chain.current_result(), proposal_.rows);
    }
    std::vector<float> scores(candidates_.size());
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor s = scorer_->forward(RowsTensor(proposal_.rows)).contiguous();
      std::memcpy(scores.data(), s.data_ptr<float>(), scores.size() * sizeof(float));
    }
    const std::vector<double> probability = ProposalProbabilities(scores, options_.uniform_share);
    double draw = random.Uniform();
    size_t k = 0;
    while (k + 1 < candidates_.size() && draw >= probability[k]) draw -= probability[k++];
    proposal_.taken = static_cast<int32_t>(k);
    return candidates_[k];
  }

  // Records the reward of the last proposal, and every moves_per_update
  // proposals takes one REINFORCE step on them.
  void Learn(double reward) {
    proposal_.reward = reward;
    batch_.push_back(proposal_);
    if (static_cast<int32_t>(batch_.size()) < options_.moves_per_update) return;
    std::vector<float> advantages;
    for (const Proposal& p : batch_) {
      advantages.push_back(static_cast<float>(p.reward - reward_baseline_));
      reward_baseline_ = kBaselineDecay * reward_baseline_ + (1 - kBaselineDecay) * p.reward;
    }
    const torch::Tensor loss = -(torch::tensor(advantages) * LogProbabilities()).mean();
    optimizer_.zero_grad();
    loss.backward();
    optimizer_.step();
    batch_.clear();
    ++updates_;
  }

  int64_t updates() const { return updates_; }

 private:
  // The log-probability of each batched proposal's move under the mixture
  // of the scorer's softmax and the uniform share, with gradients.
  torch::Tensor LogProbabilities() {
    std::vector<MoveFeatureRow> all;
    for (const Proposal& p : batch_) all.insert(all.end(), p.rows.begin(), p.rows.end());
    const torch::Tensor scores = scorer_->forward(RowsTensor(all));
    std::vector<torch::Tensor> log_probs;
    int64_t offset = 0;
    for (const Proposal& p : batch_) {
      const int64_t n = static_cast<int64_t>(p.rows.size());
      const torch::Tensor s = scores.slice(0, offset, offset + n);
      const torch::Tensor softmax = torch::exp(s[p.taken] - torch::logsumexp(s, 0));
      log_probs.push_back(torch::log((1 - options_.uniform_share) * softmax + options_.uniform_share / n));
      offset += n;
    }
    return torch::stack(log_probs);
  }

  const MovableUnits& movable_;
  GuidedSearchOptions options_;
  MoveFeatureContext context_;
  MoveScorer scorer_;
  torch::optim::Adam optimizer_;
  std::vector<Candidate> candidates_;
  std::vector<int32_t> targets_;  // one unit's candidate devices, reused
  Proposal proposal_;
  std::vector<Proposal> batch_;
  double reward_baseline_ = 0;
  int64_t updates_ = 0;
};

}  // namespace

std::vector<double> ProposalProbabilities(const std::vector<float>& scores, double uniform_share) {
  std::vector<double> probability(scores.size());
  if (scores.empty()) return probability;
  const double top = *std::max_element(scores.begin(), scores.end());
  double total = 0;
  for (size_t i = 0; i < scores.size(); ++i) total += probability[i] = std::exp(scores[i] - top);
  const double uniform = uniform_share / static_cast<double>(scores.size());
  for (double& p : probability) p = (1 - uniform_share) * p / total + uniform;
  return probability;
}

PlacerOutput PlaceGuided(const PlacementProblem& problem, const GuidedSearchOptions& options) {
  const MovableUnits movable = FindMovableUnits(problem);
  MetropolisChain chain(problem, movable, "guided");
  // The scorer's first weights, and so the whole search, follow the seed.
  torch::manual_seed(problem.seed);
  GuidedProposer proposer(problem, movable, options);
  Random random(problem.seed ^ 0x6775696465ull);  // "guide"
  while (!movable.units.empty() && !chain.OutOfBudget()) {
    const SearchCost before = chain.current_cost();
    const Candidate move = proposer.Propose(chain, random);
    const std::vector<int32_t>& ops = movable.grouping.groups[movable.units[move.unit]].ops;
    Placement next = chain.current();
    for (int32_t op : ops) next[op] = move.device;
    const SearchCost after = chain.Offer(std::move(next), ops, random);
    proposer.Learn(Reward(before, after, movable.overflow_scale_bytes));
    if (chain.evaluations() % 100 == 0) chain.Report();
  }
  chain.Report();
  char what[160];
  std::snprintf(what, sizeof what, "%lld moves, %lld restarts, %lld policy updates",
                static_cast<long long>(chain.moves()), static_cast<long long>(chain.restarts()),
                static_cast<long long>(proposer.updates()));
  return chain.Finish(what);
}

}  // namespace devplace
