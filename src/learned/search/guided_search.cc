#include "learned/search/guided_search.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include "learned/features/move_features.h"
#include "learned/features/move_history.h"
#include "learned/files/checkpoint_facts.h"
#include "learned/files/loaded_parameters.h"
#include "learned/files/run_folder.h"
#include "learned/networks/move_scorer_net.h"
#include "learned/search/guided_checkpoint.h"
#include "learned/search/guided_polish.h"
#include "learned/search/move_regressor.h"
#include "placers/metropolis_chain.h"
#include "util/error.h"
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

struct Candidate {
  int32_t unit;    // index into MovableUnits::units
  int32_t from;
  int32_t device;
  int32_t partner = -1;  // a second unit moved with it, or -1
};

// A pair move's columns beside the unit's own: a flag, then the partner's
// move features.
constexpr int kPairFeatures = 1 + kMoveFeatures;

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

int32_t RowWidth(const GuidedSearchOptions& options) {
  return kMoveFeatures + (options.read_history ? kMoveHistoryFeatures : 0) + (options.pair_moves ? kPairFeatures : 0);
}

// Per movable unit, the movable unit it exchanges the most bytes with, or -1.
std::vector<int32_t> HeaviestNeighbours(const MovableUnits& movable) {
  std::vector<int32_t> unit_of_group(movable.grouping.groups.size(), -1);
  for (size_t u = 0; u < movable.units.size(); ++u) unit_of_group[movable.units[u]] = static_cast<int32_t>(u);
  std::vector<int32_t> heaviest(movable.units.size(), -1);
  std::vector<int64_t> heaviest_bytes(movable.units.size(), 0);
  auto offer = [&](int32_t from_group, int32_t to_group, int64_t bytes) {
    const int32_t u = unit_of_group[from_group], v = unit_of_group[to_group];
    if (u < 0 || v < 0 || u == v) return;
    if (bytes > heaviest_bytes[u] || (bytes == heaviest_bytes[u] && heaviest[u] >= 0 && v < heaviest[u])) {
      heaviest[u] = v;
      heaviest_bytes[u] = bytes;
    }
  };
  for (const GroupEdge& e : movable.grouping.edges) {
    offer(e.src, e.dst, e.bytes);
    offer(e.dst, e.src, e.bytes);
  }
  return heaviest;
}

// Draws `units` units uniformly and lists every move of theirs to another
// device they can run on, each with its features (a row of RowWidth floats:
// move_features', then move_history's when the scorer reads them).
class CandidateMoves {
 public:
  CandidateMoves(const PlacementProblem& problem, const MovableUnits& movable, const GuidedSearchOptions& options)
      : movable_(movable),
        context_(problem.graph, problem.cluster, problem.cost, movable.grouping),
        read_history_(options.read_history),
        pair_moves_(options.pair_moves),
        busiest_share_(options.busiest_share),
        partner_(options.pair_moves ? HeaviestNeighbours(movable) : std::vector<int32_t>()),
        history_(static_cast<int32_t>(movable.units.size()), problem.cluster.num_devices(), kMaxReward) {}

  void Draw(int32_t units, const MetropolisChain& chain, Random& random) {
    candidates.clear();
    rows.clear();
    if (busiest_share_ > 0) FindUnitsOnTheBusiestDevice(chain);
    for (int32_t c = 0; c < units; ++c) {
      const int32_t u = DrawUnit(random);
      const int32_t group = movable_.units[u];
      const int32_t from = chain.current()[movable_.grouping.groups[group].ops.front()];
      targets_.clear();
      for (int32_t d : movable_.devices_of_unit[u]) {
        if (d == from) continue;
        candidates.push_back({u, from, d, -1});
        targets_.push_back(d);
      }
      unit_rows_.clear();
      context_.AppendRows(group, targets_, chain.current(), chain.current_result(), unit_rows_);
      for (size_t t = 0; t < targets_.size(); ++t) AppendRow(u, from, targets_[t], unit_rows_[t], nullptr, chain);
      if (!pair_moves_) continue;
      const int32_t v = partner_[u];
      if (v < 0) continue;
      const int32_t partner_group = movable_.units[v];
      if (chain.current()[movable_.grouping.groups[partner_group].ops.front()] != from) continue;
      const std::vector<int32_t>& partner_devices = movable_.devices_of_unit[v];
      pair_targets_.clear();
      for (int32_t d : targets_) {
        if (std::find(partner_devices.begin(), partner_devices.end(), d) != partner_devices.end()) {
          pair_targets_.push_back(d);
        }
      }
      partner_rows_.clear();
      context_.AppendRows(partner_group, pair_targets_, chain.current(), chain.current_result(), partner_rows_);
      for (size_t t = 0; t < pair_targets_.size(); ++t) {
        const size_t own = std::find(targets_.begin(), targets_.end(), pair_targets_[t]) - targets_.begin();
        candidates.push_back({u, from, pair_targets_[t], v});
        AppendRow(u, from, pair_targets_[t], unit_rows_[own], &partner_rows_[t], chain);
      }
    }
  }

  // The history is of single moves: a pair's reward is not the unit's.
  void Record(const Candidate& move, int64_t now, double reward) {
    if (move.partner < 0) history_.Record(move.unit, move.from, move.device, now, reward);
  }

  MoveHistory& history() { return history_; }

  std::vector<Candidate> candidates;
  std::vector<float> rows;

 private:
  // The units on the device whose compute is busiest in the current run.
  void FindUnitsOnTheBusiestDevice(const MetropolisChain& chain) {
    const std::vector<DeviceStats>& devices = chain.current_result().devices;
    on_busiest_.clear();
    if (devices.empty()) return;
    size_t busiest = 0;
    for (size_t d = 1; d < devices.size(); ++d) {
      if (devices[d].compute_total_us() > devices[busiest].compute_total_us()) busiest = d;
    }
    for (size_t u = 0; u < movable_.units.size(); ++u) {
      const int32_t op = movable_.grouping.groups[movable_.units[u]].ops.front();
      if (chain.current()[op] == static_cast<int32_t>(busiest)) on_busiest_.push_back(static_cast<int32_t>(u));
    }
  }

  int32_t DrawUnit(Random& random) {
    if (busiest_share_ > 0 && random.Uniform() < busiest_share_ && !on_busiest_.empty()) {
      return on_busiest_[random.Below(on_busiest_.size())];
    }
    return static_cast<int32_t>(random.Below(movable_.units.size()));
  }

  void AppendRow(int32_t u, int32_t from, int32_t to, const MoveFeatureRow& own, const MoveFeatureRow* partner,
                 const MetropolisChain& chain) {
    rows.insert(rows.end(), own.begin(), own.end());
    if (read_history_) history_.Append(u, from, to, chain.evaluations(), rows);
    if (!pair_moves_) return;
    rows.push_back(partner ? 1.0f : 0.0f);
    if (partner) {
      rows.insert(rows.end(), partner->begin(), partner->end());
    } else {
      rows.insert(rows.end(), kMoveFeatures, 0.0f);
    }
  }

  const MovableUnits& movable_;
  MoveFeatureContext context_;
  bool read_history_;
  bool pair_moves_;
  double busiest_share_;
  std::vector<int32_t> on_busiest_;  // FindUnitsOnTheBusiestDevice's
  std::vector<int32_t> partner_;  // per unit, HeaviestNeighbours
  std::vector<int32_t> pair_targets_;
  std::vector<MoveFeatureRow> partner_rows_;
  MoveHistory history_;
  std::vector<int32_t> targets_;  // one unit's candidate devices, reused
  std::vector<MoveFeatureRow> unit_rows_;
};

size_t DrawFrom(const std::vector<double>& probability, Random& random) {
  double draw = random.Uniform();
  size_t k = 0;
  while (k + 1 < probability.size() && draw >= probability[k]) draw -= probability[k++];
  return k;
}

// Where guided's moves come from: Propose draws one, Learn takes its reward.
class Proposer {
 public:
  Proposer(const PlacementProblem& problem, const MovableUnits& movable, const GuidedSearchOptions& options)
      : options_(options), width_(RowWidth(options)), moves_(problem, movable, options), polish_(options.polish_share) {}
  virtual ~Proposer() = default;

  Candidate Propose(const MetropolisChain& chain, Random& random) {
    const bool polishing = polish_.active() && options_.polish_candidate_units > 0;
    moves_.Draw(polishing ? options_.polish_candidate_units : options_.candidate_units, chain, random);
    // Out of memory, the chain's rewards are overflow saved in units of a
    // quarter of a unit's bytes, bounded at +-5: tens of times the step
    // time's, so the screen's softmax (a temperature in percent of step
    // time) proposes the move it predicts best almost always, a greedy
    // descent of overflow that stalls where a packing needs a move that
    // first overflows more (the packing puzzle, seed 7: out of memory after
    // 1,000 evaluations where mcmc fits on every seed). There it draws
    // uniformly among the candidates, as mcmc does, until the chain fits.
    // Polishing, it takes the best-predicted move not yet tried instead.
    screened_ = chain.current_cost().fits();
    size_t k = 0;
    if (!screened_) {
      k = random.Below(moves_.candidates.size());
    } else if (polish_.active()) {
      const std::vector<float> scores = Scores();
      k = polish_.Pick(PolishMoves(), scores);
      // The descent has ended (every candidate tried since its last
      // improvement): the search's own move instead of a repeat.
      if (k == moves_.candidates.size()) k = DrawFrom(ProposalProbabilities(scores, options_.uniform_share), random);
    } else {
      k = DrawFrom(ProposalProbabilities(Scores(), options_.uniform_share), random);
    }
    Taken(k);
    taken_ = moves_.candidates[k];
    return taken_;
  }

  // `refused`: the chain refused the move for certain.
  void Learn(int64_t now, double reward, bool refused) {
    moves_.Record(taken_, now, reward);
    if (polish_.active() && screened_) polish_.Record({taken_.unit, taken_.device, taken_.partner}, reward > 0);
    LearnReward(reward, refused);
  }

  int64_t updates() const { return updates_; }
  GreedyPolish& polish() { return polish_; }

  // The screen from a file (GuidedSearchOptions::screen_file), and to one;
  // every problem an Error naming the file.
  virtual void StartScreenFrom(const std::string& path, int32_t prior_rows) = 0;
  virtual void SaveScreen(const std::string& path) = 0;

  // The proposer's state for a checkpoint: plain facts in `facts`, tensors
  // in `archive`; and back, every problem an Error naming `path`.
  void Save(nlohmann::json& facts, torch::serialize::OutputArchive& archive) {
    facts["updates"] = updates_;
    std::vector<int64_t> when;
    std::vector<float> reward;
    moves_.history().Save(when, reward);
    archive.write("history_when", torch::tensor(when, torch::kInt64));
    archive.write("history_reward", torch::tensor(reward, torch::kFloat32));
    SaveOwn(facts, archive);
  }
  void Load(const std::string& path, const nlohmann::json& json, torch::serialize::InputArchive& archive) {
    const CheckpointFacts facts(path, json, "checkpoint's proposer");
    updates_ = facts.Integer("updates", 0, INT64_MAX);
    torch::Tensor when, reward;
    if (!archive.try_read("history_when", when) || !archive.try_read("history_reward", reward) ||
        when.scalar_type() != torch::kInt64 || reward.scalar_type() != torch::kFloat32 ||
        !moves_.history().Load(std::vector<int64_t>(when.data_ptr<int64_t>(), when.data_ptr<int64_t>() + when.numel()),
                               std::vector<float>(reward.data_ptr<float>(), reward.data_ptr<float>() + reward.numel()))) {
      facts.Fail("checkpoint's move history is damaged or of another graph");
    }
    LoadOwn(facts, archive);
  }

 protected:
  virtual void SaveOwn(nlohmann::json& facts, torch::serialize::OutputArchive& archive) = 0;
  virtual void LoadOwn(const CheckpointFacts& facts, torch::serialize::InputArchive& archive) = 0;
  virtual std::vector<float> Scores() = 0;
  virtual void Taken(size_t k) = 0;
  virtual void LearnReward(double reward, bool refused) = 0;

  std::vector<PolishMove> PolishMoves() const {
    std::vector<PolishMove> moves;
    moves.reserve(moves_.candidates.size());
    for (const Candidate& c : moves_.candidates) moves.push_back({c.unit, c.device, c.partner});
    return moves;
  }

  GuidedSearchOptions options_;
  int32_t width_;
  CandidateMoves moves_;
  Candidate taken_{};
  bool screened_ = true;  // the last move was drawn by the scorer, not uniformly out of memory
  int64_t updates_ = 0;
  GreedyPolish polish_;
};

// kRegression: the candidates' predicted rewards over the temperature are
// the scores; every evaluated move is a training row.
class RegressionProposer : public Proposer {
 public:
  RegressionProposer(const PlacementProblem& problem, const MovableUnits& movable, const GuidedSearchOptions& options)
      : Proposer(problem, movable, options),
        regressor_(RegressorOptions(options), problem.seed),
        train_random_(problem.seed ^ 0x7265677265ull) {}  // "regre"

 protected:
  std::vector<float> Scores() override {
    std::vector<float> scores = regressor_.Predict(moves_.rows);
    for (float& s : scores) s = static_cast<float>(s / options_.temperature);
    return scores;
  }

  void Taken(size_t k) override {
    taken_row_.assign(moves_.rows.begin() + k * width_, moves_.rows.begin() + (k + 1) * width_);
  }

  void SaveOwn(nlohmann::json& facts, torch::serialize::OutputArchive& archive) override {
    facts["since_update"] = since_update_;
    facts["train_random_state"] = std::to_string(train_random_.state());
    regressor_.Save(archive);
  }
  void LoadOwn(const CheckpointFacts& facts, torch::serialize::InputArchive& archive) override {
    since_update_ = static_cast<int32_t>(facts.Integer("since_update", 0, options_.moves_per_update - 1));
    const std::string state = facts.String("train_random_state");
    try {
      size_t used = 0;
      train_random_.set_state(std::stoull(state, &used));
      if (used != state.size()) throw std::invalid_argument(state);
    } catch (const std::exception&) {
      facts.Fail("checkpoint's 'train_random_state' is not a number");
    }
    if (const std::string problem = regressor_.Load(archive); !problem.empty()) facts.Fail("checkpoint's move regressor " + problem);
  }

  void StartScreenFrom(const std::string& path, int32_t prior_rows) override {
    regressor_.LoadFile(path);
    regressor_.KeepNewest(prior_rows);
  }
  void SaveScreen(const std::string& path) override { regressor_.SaveFile(path); }

  void LearnReward(double reward, bool refused) override {
    regressor_.Add(taken_row_, ScreenLabel(reward, refused, options_.screen_target));
    if (++since_update_ < options_.moves_per_update) return;
    since_update_ = 0;
    regressor_.Train(options_.train_steps, train_random_);
    ++updates_;
  }

 private:
  static MoveRegressorOptions RegressorOptions(const GuidedSearchOptions& options) {
    MoveRegressorOptions o;
    o.features = RowWidth(options);
    o.hidden = options.hidden;
    o.learning_rate = options.learning_rate;
    o.batch_rows = options.batch_rows;
    return o;
  }

  MoveRegressor regressor_;
  Random train_random_;
  std::vector<float> taken_row_;
  int32_t since_update_ = 0;
};

[[noreturn]] void NoScreen(const std::string& path) {
  throw Error(ForMessage(path) + ": a screen file is for guided's regression screen, not its REINFORCE policy");
}

// kReinforce: the scorer's outputs are the policy's logits, trained on each
// move's reward less a running baseline.
class ReinforceProposer : public Proposer {
 public:
  ReinforceProposer(const PlacementProblem& problem, const MovableUnits& movable, const GuidedSearchOptions& options)
      : Proposer(problem, movable, options),
        scorer_(width_, options.hidden),
        optimizer_(scorer_->parameters(), torch::optim::AdamOptions(options.learning_rate)) {}

 protected:
  std::vector<float> Scores() override {
    std::vector<float> scores(moves_.candidates.size());
    torch::NoGradGuard no_grad;
    const torch::Tensor s = scorer_->forward(MoveRowsTensor(moves_.rows, width_)).contiguous();
    std::memcpy(scores.data(), s.data_ptr<float>(), scores.size() * sizeof(float));
    return scores;
  }

  void Taken(size_t k) override {
    proposal_.rows = moves_.rows;
    proposal_.taken = static_cast<int32_t>(k);
  }

  void SaveOwn(nlohmann::json& facts, torch::serialize::OutputArchive& archive) override {
    nlohmann::json batch = nlohmann::json::array();
    for (const Proposal& p : batch_) batch.push_back({{"rows", p.rows}, {"taken", p.taken}, {"reward", p.reward}});
    facts["reward_baseline"] = reward_baseline_;
    facts["batch"] = batch;
    torch::serialize::OutputArchive scorer_archive;
    scorer_->save(scorer_archive);
    archive.write("scorer", scorer_archive);
    WriteOptimizerState(archive, optimizer_);
  }
  void LoadOwn(const CheckpointFacts& facts, torch::serialize::InputArchive& archive) override {
    reward_baseline_ = facts.Number("reward_baseline", -kMaxReward);
    batch_.clear();
    for (const nlohmann::json& p : facts.Array("batch")) {
      if (!p.is_object() || !p.contains("rows") || !p["rows"].is_array() || !p.contains("taken") || !p.contains("reward") ||
          p["rows"].empty() || p["rows"].size() % width_ != 0) {
        facts.Fail("checkpoint's proposer has a malformed move");
      }
      Proposal proposal;
      for (const nlohmann::json& value : p["rows"]) proposal.rows.push_back(static_cast<float>(facts.NumberOf(value, "rows", -1e30)));
      const int64_t candidates = static_cast<int64_t>(proposal.rows.size()) / width_;
      proposal.taken = static_cast<int32_t>(facts.IntegerOf(p["taken"], "taken", 0, candidates - 1));
      proposal.reward = facts.NumberOf(p["reward"], "reward", -kMaxReward);
      batch_.push_back(std::move(proposal));
    }
    if (static_cast<int32_t>(batch_.size()) >= options_.moves_per_update) facts.Fail("checkpoint's proposer holds more moves than an update takes");
    const ParameterShapes shapes = ShapesOf(*scorer_);
    try {
      torch::serialize::InputArchive scorer_archive;
      archive.read("scorer", scorer_archive);
      scorer_->load(scorer_archive);
      ReadOptimizerState(archive, optimizer_);
    } catch (const c10::Error&) {
      facts.Fail("checkpoint's scorer does not load (damaged, or of other sizes)");
    }
    if (const std::string problem = LoadedParametersProblem(*scorer_, shapes); !problem.empty()) facts.Fail("checkpoint's scorer " + problem);
  }

  void StartScreenFrom(const std::string& path, int32_t /*prior_rows*/) override { NoScreen(path); }
  void SaveScreen(const std::string& path) override { NoScreen(path); }

  // Records the reward of the last proposal, and every moves_per_update
  // proposals takes one REINFORCE step on them.
  void LearnReward(double reward, bool /*refused*/) override {
    // A move drawn uniformly (out of memory) is not the policy's: its
    // log-probability is not what the gradient needs.
    if (!screened_) return;
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

 private:
  // One proposal as the update reads it again: its candidates' features,
  // which one was taken, and its reward.
  struct Proposal {
    std::vector<float> rows;
    int32_t taken = 0;
    double reward = 0;
  };

  // The log-probability of each batched proposal's move under the mixture
  // of the scorer's softmax and the uniform share, with gradients.
  torch::Tensor LogProbabilities() {
    std::vector<float> all;
    for (const Proposal& p : batch_) all.insert(all.end(), p.rows.begin(), p.rows.end());
    const torch::Tensor scores = scorer_->forward(MoveRowsTensor(all, width_));
    std::vector<torch::Tensor> log_probs;
    int64_t offset = 0;
    for (const Proposal& p : batch_) {
      const int64_t n = static_cast<int64_t>(p.rows.size()) / width_;
      const torch::Tensor s = scores.slice(0, offset, offset + n);
      const torch::Tensor softmax = torch::exp(s[p.taken] - torch::logsumexp(s, 0));
      log_probs.push_back(torch::log((1 - options_.uniform_share) * softmax + options_.uniform_share / n));
      offset += n;
    }
    return torch::stack(log_probs);
  }

  MoveScorerNet scorer_;
  torch::optim::Adam optimizer_;
  Proposal proposal_;
  std::vector<Proposal> batch_;
  double reward_baseline_ = 0;
};

}  // namespace

double ScreenLabel(double reward, bool refused, GuidedScreenTarget target) {
  switch (target) {
    case GuidedScreenTarget::kReward:
      return reward;
    case GuidedScreenTarget::kRewardUnlessRefused:
      return refused ? 0 : reward;
    case GuidedScreenTarget::kAcceptedChange:
      break;
  }
  if (refused) return 0;
  return reward >= 0 ? reward : reward * std::exp(reward);
}

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

std::unique_ptr<Proposer> MakeProposer(const PlacementProblem& problem, const MovableUnits& movable,
                                       const GuidedSearchOptions& options) {
  if (options.learning == GuidedLearning::kRegression) return std::make_unique<RegressionProposer>(problem, movable, options);
  return std::make_unique<ReinforceProposer>(problem, movable, options);
}

GuidedCheckpoint CheckpointOf(const MetropolisChain& chain, const Random& random, Proposer& proposer) {
  GuidedCheckpoint checkpoint;
  checkpoint.chain = chain.State();
  checkpoint.random_state = random.state();
  checkpoint.proposer = nlohmann::json::object();
  torch::serialize::OutputArchive archive;
  proposer.Save(checkpoint.proposer, archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  checkpoint.tensors = bytes.str();
  return checkpoint;
}

void LoadProposer(const std::string& path, const GuidedCheckpoint& checkpoint, Proposer& proposer) {
  torch::serialize::InputArchive archive;
  try {
    std::istringstream in(checkpoint.tensors);
    archive.load_from(in);
  } catch (const c10::Error&) {
    throw Error(ForMessage(path) + ": checkpoint is damaged (its tensors do not load)");
  }
  try {
    proposer.Load(path, checkpoint.proposer, archive);
  } catch (const c10::Error&) {
    throw Error(ForMessage(path) + ": checkpoint's proposer does not load (damaged, or of other sizes)");
  }
}

double StepSeconds(const SearchCost& cost) { return cost.fits() ? cost.step_time_us * 1e-6 : 0; }

// The chain's coldness with `spent` of the budget spent: from `coldness` to
// `coldness_end` geometrically, and no loss taken while polishing.
double Coldness(const GuidedSearchOptions& options, double spent, bool polishing) {
  if (polishing) return std::numeric_limits<double>::infinity();
  if (options.coldness_end == options.coldness) return options.coldness;
  return options.coldness * std::pow(options.coldness_end / options.coldness, spent);
}

}  // namespace

void CheckScreenFile(const GuidedSearchOptions& options) {
  if (options.screen_file.empty()) return;
  if (options.learning != GuidedLearning::kRegression) NoScreen(options.screen_file);
  ReadScreenFile(options.screen_file, RowWidth(options), options.hidden);
}

PlacerOutput PlaceGuided(const PlacementProblem& problem, const GuidedSearchOptions& options, const GuidedRunFiles& files,
                         const GuidedStart& start) {
  const MovableUnits movable = FindMovableUnits(problem);
  // Everything the checkpoint holds is read and checked before the folder
  // is touched.
  std::optional<GuidedCheckpoint> resumed;
  const std::string checkpoint_path = (std::filesystem::path(files.out_dir) / run_folder::kCheckpoint).string();
  if (files.resume) resumed = ReadGuidedCheckpoint(checkpoint_path, problem, movable, options);
  // The scorer's first weights, and so the whole search, follow the seed.
  torch::manual_seed(problem.seed);
  std::unique_ptr<Proposer> proposer = MakeProposer(problem, movable, options);
  // A resumed run's screen is its checkpoint's.
  if (!resumed && !options.screen_file.empty()) proposer->StartScreenFrom(options.screen_file, options.screen_prior_rows);
  Random random(problem.seed ^ 0x6775696465ull);  // "guide"
  std::unique_ptr<MetropolisChain> chain;
  if (resumed) {
    LoadProposer(checkpoint_path, *resumed, *proposer);
    random.set_state(resumed->random_state);
    chain = std::make_unique<MetropolisChain>(problem, movable, std::move(resumed->chain));
  } else if (!start.placement.empty()) {
    chain = MakeChainFrom(problem, movable, "guided", start.placement, start.name);
  } else {
    chain = std::make_unique<MetropolisChain>(problem, movable, "guided");
  }
  GuidedRunFolder folder(problem, movable, options, files);
  auto report = [&] {
    chain->Report();
    folder.AppendCurve(chain->evaluations(), chain->seconds(), StepSeconds(chain->current_cost()),
                       StepSeconds(chain->best_cost()));
  };
  // Once the polish has begun, the checkpoint is where the run stood just
  // before it (the polish is the end of this budget, not of a larger one):
  // continued, with the same budget or a larger one, the run is the one
  // that was never stopped. The best placement file is the run's best.
  std::optional<GuidedCheckpoint> before_polish;
  auto write_checkpoint = [&] {
    folder.WriteCheckpoint(before_polish ? *before_polish : CheckpointOf(*chain, random, *proposer), chain->State().best);
  };
  Placement exchanged;
  std::vector<int32_t> exchanged_ops;
  GreedyPolish& polish = proposer->polish();
  SearchCost polished_best;  // the best when the last descent ended
  while (!movable.units.empty() && !chain->OutOfBudget()) {
    const double spent = chain->BudgetSpent();
    if (polish.StartsNow(spent)) {
      if (folder.enabled()) before_polish = CheckpointOf(*chain, random, *proposer);
      chain->ReturnToBest();
      continue;
    }
    if (polish.active()) {
      polished_best = chain->best_cost();
    } else if (polish.begun() && Better(chain->best_cost(), polished_best)) {
      // The search found a new best since the last descent ended: it is
      // polished in turn.
      polish.Resume();
      if (Better(chain->best_cost(), chain->current_cost())) chain->ReturnToBest();
      continue;
    }
    chain->set_coldness(Coldness(options, spent, polish.active()));
    // Out of memory, mcmc's exchanges too (placers/metropolis_chain.h);
    // the scorer knows single moves only and learns nothing from them.
    if (!chain->current_cost().fits() && ProposeExchange(movable, chain->current(), random, exchanged, exchanged_ops)) {
      chain->Offer(std::move(exchanged), exchanged_ops, random);
      if (chain->evaluations() % 100 == 0) report();
      continue;
    }
    const SearchCost before = chain->current_cost();
    const Candidate move = proposer->Propose(*chain, random);
    std::vector<int32_t> ops = movable.grouping.groups[movable.units[move.unit]].ops;
    if (move.partner >= 0) {
      const std::vector<int32_t>& more = movable.grouping.groups[movable.units[move.partner]].ops;
      ops.insert(ops.end(), more.begin(), more.end());
    }
    Placement next = chain->current();
    for (int32_t op : ops) next[op] = move.device;
    const SearchCost after = chain->Offer(std::move(next), ops, random);
    // The Metropolis test refuses any step to a worse tier.
    proposer->Learn(chain->evaluations(), Reward(before, after, movable.overflow_scale_bytes), after.tier > before.tier);
    if (chain->evaluations() % 100 == 0) {
      report();
      if (folder.CheckpointDue(chain->seconds())) write_checkpoint();
    }
  }
  report();
  if (folder.enabled()) write_checkpoint();
  if (!options.screen_out.empty()) proposer->SaveScreen(options.screen_out);
  char counts[160];
  std::snprintf(counts, sizeof counts, "%lld moves, %lld restarts, %lld policy updates",
                static_cast<long long>(chain->moves()), static_cast<long long>(chain->restarts()),
                static_cast<long long>(proposer->updates()));
  std::string what = counts;
  if (polish.begun()) {
    std::snprintf(counts, sizeof counts, ", %lld polish moves in %lld descent%s", static_cast<long long>(polish.picks()),
                  static_cast<long long>(polish.descents()), polish.descents() == 1 ? "" : "s");
    what += counts;
  }
  if (!options.screen_file.empty()) what += ", screen from " + std::filesystem::path(options.screen_file).filename().string();
  return chain->Finish(what);
}

}  // namespace devplace
