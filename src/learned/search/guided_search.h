// guided: mcmc whose moves come from a learned proposal. The chain is
// mcmc's (the same start, ranking, Metropolis test and restarts; see
// placers/metropolis_chain.h), but instead of a uniform unit and device each
// move is drawn from candidates scored by a small network over what each
// move does (learned/features/move_features.h) and what the search has
// already seen of it (learned/features/move_history.h). By default the
// network is a regressor of each move's reward fitted to every move
// evaluated so far, and the candidates include a unit moved together with
// its heaviest neighbour; the first design, a policy trained by REINFORCE,
// stays an option (GuidedLearning). The scorer reads ratios only, so the
// same weights serve any graph and cluster. This header has no torch in it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "placers/placer.h"

namespace devplace {

// How the scorer learns. kReinforce: a policy over candidate moves, by
// REINFORCE on each move's reward. kRegression: a regressor predicts each
// candidate's reward, fitted to every evaluated move so far
// (learned/search/move_regressor.h), and moves are proposed by the softmax
// of the predictions over `temperature`.
enum class GuidedLearning { kReinforce, kRegression };

// What the regression screen is fitted to predict of a move.
// - kReward: its reward.
// - kRewardUnlessRefused: its reward, but 0 for a move the chain refuses
//   for certain (one that leaves a placement that fits out of memory):
//   such a move costs its evaluation and changes nothing, as a move that
//   does not change the step. Fitted to the reward instead, the bound
//   (-5) of every such move drags down the prediction of every move into
//   a nearly full device, and on a cluster tight on memory, where those
//   are the moves that speed the step up, the screen stops proposing them
//   (BENCHMARKS.md, "Learned against search").
// - kAcceptedChange: its reward where it gains, and where it loses, the
//   loss times exp(reward), the probability that the Metropolis test takes
//   it (the reward is in the test's units): the change it makes to where
//   the chain stands. Kinder to every loss than kRewardUnlessRefused, and
//   behind it where losses matter (BENCHMARKS.md).
enum class GuidedScreenTarget { kReward, kRewardUnlessRefused, kAcceptedChange };

struct GuidedSearchOptions {
  // Units drawn uniformly per move; the policy chooses among their moves.
  int32_t candidate_units = 32;
  // The share of proposals drawn uniformly among the candidates, so every
  // move keeps a chance however the scorer learns.
  double uniform_share = 0.2;
  double learning_rate = 0.01;
  // Moves per policy update.
  int32_t moves_per_update = 16;
  int32_t hidden = 32;
  GuidedLearning learning = GuidedLearning::kRegression;
  // kRegression: the softmax's temperature, in reward units (percent of
  // step time), and Adam steps per update on minibatches of `batch_rows`
  // drawn from every move evaluated so far.
  double temperature = 0.25;
  int32_t train_steps = 4;
  int32_t batch_rows = 128;
  // The scorer also reads what the search has seen of each move
  // (learned/features/move_history.h): its last reward and the move back's.
  bool read_history = true;
  // Candidates also include each drawn unit moved together with its
  // heaviest neighbour (by bytes between them) that shares its device,
  // scored by the same network (the partner's own features beside).
  bool pair_moves = true;
  // kRegression: what the screen predicts of a move (GuidedScreenTarget).
  GuidedScreenTarget screen_target = GuidedScreenTarget::kRewardUnlessRefused;
  // The last share of the budget as greedy descents from the best
  // placements found (learned/search/guided_polish.h); 0: none. A fifth by
  // default: it lifted guided on the 20 settings at equal samples on both
  // seed sets measured, over a tenth (BENCHMARKS.md, "Designs tried on the
  // 20 settings").
  double polish_share = 0.2;
  // Units drawn per move while polishing; 0: candidate_units.
  int32_t polish_candidate_units = 0;
  // The chain's Metropolis test, as a multiple of mcmc's coldness
  // (MetropolisChain::set_coldness): `coldness` at the start of the budget,
  // `coldness_end` at its end, geometrically between.
  double coldness = 1;
  double coldness_end = 1;
  // The share of the candidate units drawn among the units on the device
  // busiest in the current run (the rest uniformly among all units).
  double busiest_share = 0;
  // kRegression: the screen starts from this file (one that `screen_out`
  // wrote, fitted on other graphs and clusters): its network and optimizer,
  // and the newest `screen_prior_rows` of its rows, which the search's own
  // rows replace, oldest first (none by default: the network alone measured
  // ahead; BENCHMARKS.md, "A screen fitted on other graphs"). Empty: a
  // fresh screen from the seed.
  std::string screen_file;
  int32_t screen_prior_rows = 0;
  // Where the screen is written at the end (its network, optimizer and
  // rows), for `screen_file` of later searches; empty: nowhere.
  std::string screen_out;
};

// Where a guided search keeps its files (`place --out`), and whether it
// continues the run there. With no folder it writes nothing.
struct GuidedRunFiles {
  std::string out_dir;
  // Continue from out_dir's checkpoint: the same run as one never stopped,
  // given the same evaluation budget in all.
  bool resume = false;
  // Seconds between checkpoints (each with the best placement so far); one
  // is always written at the end, a stop's included. 0: only at the end.
  double checkpoint_seconds = 30;
};

// What the regression screen is fitted to for a move with `reward` (the
// chain's relative speed-up in percent, or overflow saved, bounded at +-5)
// that the chain refused for certain or not (GuidedScreenTarget).
double ScreenLabel(double reward, bool refused, GuidedScreenTarget target);

// The proposal distribution over candidate moves given their scores: the
// softmax of the scores mixed with `uniform_share` of the uniform one. What
// a move's log-probability is, and what the search draws from.
std::vector<double> ProposalProbabilities(const std::vector<float>& scores, double uniform_share);

// Where a guided search starts: empty, from the one-shot baselines' best
// (as mcmc); else from `placement` (placers/metropolis_chain.h's
// MakeChainFrom), named `name` in the note. A resumed run continues from
// its checkpoint instead.
struct GuidedStart {
  Placement placement;
  std::string name;
};

// Throws the Error PlaceGuided would for `options.screen_file` (missing,
// damaged, of other sizes, or with kReinforce), so that a command can say
// it before it says anything else.
void CheckScreenFile(const GuidedSearchOptions& options);

PlacerOutput PlaceGuided(const PlacementProblem& problem, const GuidedSearchOptions& options = {},
                         const GuidedRunFiles& files = {}, const GuidedStart& start = {});

}  // namespace devplace
