// guided: mcmc whose moves come from a learned proposal. The chain is
// mcmc's (the same start, ranking, Metropolis test and restarts; see
// placers/metropolis_chain.h), but instead of a uniform unit and device each
// move is drawn from a policy that scores candidate moves by what they do
// (learned/features/move_features.h) with a small network, trained online
// by REINFORCE on the chain's own improvements: moves like those that made
// the step faster are proposed more, moves like those that made it slower
// less. The scorer reads ratios only, so the same weights serve any graph
// and cluster. This header has no torch in it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "placers/placer.h"

namespace devplace {

struct GuidedSearchOptions {
  // Units drawn uniformly per move; the policy chooses among their moves.
  int32_t candidate_units = 16;
  // The share of proposals drawn uniformly among the candidates, so every
  // move keeps a chance however the scorer learns.
  double uniform_share = 0.2;
  double learning_rate = 0.01;
  // Moves per policy update.
  int32_t moves_per_update = 16;
  int32_t hidden = 32;
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

// The proposal distribution over candidate moves given their scores: the
// softmax of the scores mixed with `uniform_share` of the uniform one. What
// a move's log-probability is, and what the search draws from.
std::vector<double> ProposalProbabilities(const std::vector<float>& scores, double uniform_share);

PlacerOutput PlaceGuided(const PlacementProblem& problem, const GuidedSearchOptions& options = {},
                         const GuidedRunFiles& files = {});

}  // namespace devplace
