#include "learned/search/guided_search.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>

#include "learned/features/move_features.h"
#include "learned/files/checkpoint_facts.h"
#include "learned/files/loaded_parameters.h"
#include "learned/files/run_files.h"
#include "learned/files/run_folder.h"
#include "learned/search/guided_checkpoint.h"
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

  // The proposer's state for a checkpoint: its plain facts (the moves since
  // the last update among them) and its scorer's and optimizer's tensors.
  nlohmann::json Facts() const {
    nlohmann::json batch = nlohmann::json::array();
    for (const Proposal& p : batch_) batch.push_back({{"rows", p.rows}, {"taken", p.taken}, {"reward", p.reward}});
    return {{"reward_baseline", reward_baseline_}, {"updates", updates_}, {"batch", batch}};
  }
  std::string Tensors() {
    torch::serialize::OutputArchive archive;
    torch::serialize::OutputArchive scorer_archive;
    scorer_->save(scorer_archive);
    archive.write("scorer", scorer_archive);
    WriteOptimizerState(archive, optimizer_);
    std::ostringstream bytes;
    archive.save_to(bytes);
    return bytes.str();
  }

  // Back from a checkpoint; every problem is one Error naming the file.
  void Load(const std::string& path, const nlohmann::json& facts, const std::string& tensors) {
    const CheckpointFacts proposer(path, facts, "checkpoint's proposer");
    auto fail = [&](const std::string& problem) { proposer.Fail("checkpoint's proposer " + problem); };
    reward_baseline_ = proposer.NumberOf(proposer.Field("reward_baseline"), "reward_baseline", -1e9);
    updates_ = proposer.Integer("updates", 0, INT64_MAX);
    batch_.clear();
    for (const nlohmann::json& p : proposer.Array("batch")) {
      if (!p.is_object() || !p.contains("rows") || !p["rows"].is_array() || !p.contains("taken") || !p.contains("reward")) {
        fail("has a malformed move");
      }
      Proposal proposal;
      for (const nlohmann::json& row : p["rows"]) {
        if (!row.is_array() || row.size() != kMoveFeatures) fail("has a move of another feature count");
        MoveFeatureRow r;
        for (int k = 0; k < kMoveFeatures; ++k) r[k] = static_cast<float>(proposer.NumberOf(row[k], "rows", -1e30));
        proposal.rows.push_back(r);
      }
      proposal.taken = static_cast<int32_t>(proposer.IntegerOf(p["taken"], "taken", 0, static_cast<int64_t>(proposal.rows.size()) - 1));
      proposal.reward = proposer.NumberOf(p["reward"], "reward", -kMaxReward);
      batch_.push_back(std::move(proposal));
    }
    if (static_cast<int32_t>(batch_.size()) >= options_.moves_per_update) fail("holds more moves than an update takes");
    const ParameterShapes shapes = ShapesOf(*scorer_);
    try {
      std::istringstream in(tensors);
      torch::serialize::InputArchive archive;
      archive.load_from(in);
      torch::serialize::InputArchive scorer_archive;
      archive.read("scorer", scorer_archive);
      scorer_->load(scorer_archive);
      ReadOptimizerState(archive, optimizer_);
    } catch (const c10::Error&) {
      fail("does not load (damaged, or of other sizes)");
    }
    if (const std::string problem = LoadedParametersProblem(*scorer_, shapes); !problem.empty()) fail("scorer " + problem);
  }

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

namespace {

GuidedCheckpoint CheckpointOf(const MetropolisChain& chain, const Random& random, GuidedProposer& proposer) {
  GuidedCheckpoint checkpoint;
  checkpoint.chain = chain.State();
  checkpoint.random_state = random.state();
  checkpoint.proposer = proposer.Facts();
  checkpoint.tensors = proposer.Tensors();
  return checkpoint;
}

double StepSeconds(const SearchCost& cost) { return cost.fits() ? cost.step_time_us * 1e-6 : 0; }

}  // namespace

PlacerOutput PlaceGuided(const PlacementProblem& problem, const GuidedSearchOptions& options, const GuidedRunFiles& files) {
  const MovableUnits movable = FindMovableUnits(problem);
  // Everything the checkpoint holds is read and checked before the folder
  // is touched.
  std::optional<GuidedCheckpoint> resumed;
  const std::string checkpoint_path = (std::filesystem::path(files.out_dir) / run_folder::kCheckpoint).string();
  if (files.resume) resumed = ReadGuidedCheckpoint(checkpoint_path, problem, movable, options);
  // The scorer's first weights, and so the whole search, follow the seed.
  torch::manual_seed(problem.seed);
  GuidedProposer proposer(problem, movable, options);
  Random random(problem.seed ^ 0x6775696465ull);  // "guide"
  std::unique_ptr<MetropolisChain> chain;
  if (resumed) {
    proposer.Load(checkpoint_path, resumed->proposer, resumed->tensors);
    random.set_state(resumed->random_state);
    chain = std::make_unique<MetropolisChain>(problem, movable, std::move(resumed->chain));
  } else {
    chain = std::make_unique<MetropolisChain>(problem, movable, "guided");
  }
  GuidedRunFolder folder(problem, movable, options, files);
  auto report = [&] {
    chain->Report();
    folder.AppendCurve(chain->evaluations(), chain->seconds(), StepSeconds(chain->current_cost()),
                       StepSeconds(chain->best_cost()));
  };
  while (!movable.units.empty() && !chain->OutOfBudget()) {
    const SearchCost before = chain->current_cost();
    const Candidate move = proposer.Propose(*chain, random);
    const std::vector<int32_t>& ops = movable.grouping.groups[movable.units[move.unit]].ops;
    Placement next = chain->current();
    for (int32_t op : ops) next[op] = move.device;
    const SearchCost after = chain->Offer(std::move(next), ops, random);
    proposer.Learn(Reward(before, after, movable.overflow_scale_bytes));
    if (chain->evaluations() % 100 == 0) {
      report();
      if (folder.CheckpointDue(chain->seconds())) folder.WriteCheckpoint(CheckpointOf(*chain, random, proposer));
    }
  }
  report();
  folder.WriteCheckpoint(CheckpointOf(*chain, random, proposer));
  char what[160];
  std::snprintf(what, sizeof what, "%lld moves, %lld restarts, %lld policy updates",
                static_cast<long long>(chain->moves()), static_cast<long long>(chain->restarts()),
                static_cast<long long>(proposer.updates()));
  return chain->Finish(what);
}

}  // namespace devplace
