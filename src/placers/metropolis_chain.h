// The Metropolis chain of the local searches (mcmc, and guided in the
// learned layer): where it starts, how a proposed move is evaluated, kept
// as the best, accepted or refused, and when the chain restarts from its
// best. A search only proposes moves; the chain is the same for all, so
// that searches differ only in where their moves come from.
//
// Placements that run out of memory are not solutions, but the chain may
// pass through them: it starts from the fastest one-shot baseline that fits
// (else the one that overflows least) and ranks placements
// lexicographically (placers/search_cost.h): any that fits beats any out of
// memory, and among those out of memory less overflow is better.
//
// Given an environment (PlacementProblem::environment; `place --reward
// measured`: real runs), every candidate is measured in full by it instead
// of simulated incrementally, and any failure ranks below every placement
// that ran.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/grouping.h"
#include "placers/placer.h"
#include "placers/search_cost.h"
#include "util/random.h"

namespace devplace {

// What a chain moves: units (co-location groups) that more than one device
// can run, each with those devices.
struct MovableUnits {
  Grouping grouping;
  std::vector<int32_t> units;                      // group indices
  std::vector<std::vector<int32_t>> devices_of_unit;  // per entry of `units`
  double overflow_scale_bytes = 1;                 // AcceptanceProbability's, from the units' mean size
};
MovableUnits FindMovableUnits(const PlacementProblem& problem);

// Where a chain stands: enough to continue it in another process (a
// search's checkpoint). Its placements' runs are not kept: a chain made
// from it simulates (or measures) them again.
struct ChainState {
  Placement current, best;
  int64_t since_best = 0, evaluations = 0, moves = 0, restarts = 0, resumed = 0;
  double seconds = 0;  // spent before
  std::string start_method;
  bool start_fits = false;
};

class MetropolisChain {
 public:
  // Runs the one-shot baselines and starts at the best (BestStart) of
  // `more_starts` (placements already run, counted as one evaluation each,
  // first on a tie) and theirs. Throws Error when none gave a placement,
  // Stopped when a stop came first. `method` names the search in errors.
  MetropolisChain(const PlacementProblem& problem, const MovableUnits& movable, const std::string& method,
                  std::vector<PlacerRun> more_starts = {});
  // Continues the chain `state` describes, from the same point: no baseline
  // runs; its current and best placements are run again, uncounted, and the
  // budget counts what it spent before. `state`'s placements must be valid
  // for the problem (the caller checked them).
  MetropolisChain(const PlacementProblem& problem, const MovableUnits& movable, ChainState state);

  // The budget the search was given, or the chain's default (2,000
  // evaluations or 60 s, whichever first) when it was given none.
  bool OutOfBudget() const;
  double seconds() const;

  const Placement& current() const { return current_; }
  const SimResult& current_result() const { return current_result_; }
  const SearchCost& current_cost() const { return current_cost_; }
  const SearchCost& best_cost() const { return best_cost_; }

  // Evaluates `next`, the current placement with `changed_ops` moved (by
  // the simulator from its remembered run, or the environment), keeps it
  // if it is the best so far, accepts it by the Metropolis test (drawing
  // from `random` only when the test is not certain), and restarts from the
  // best after long enough without a new best. Returns its cost.
  SearchCost Offer(Placement next, std::span<const int32_t> changed_ops, Random& random);

  // How cold the Metropolis test is between placements that fit: a multiple
  // of mcmc's (1); infinity takes no loss at all. A search whose moves are
  // better than uniform may take fewer losses. Not part of ChainState: a
  // search that changes it sets it before each move.
  void set_coldness(double coldness) { coldness_ = coldness; }
  // The share of the budget spent, 0 to 1: of its evaluations or of its
  // seconds, whichever is further along.
  double BudgetSpent() const;
  // Moves the chain back to its best placement, as a restart does (one
  // evaluation).
  void ReturnToBest();

  // Sends the search's progress (evaluations, best, current, seconds).
  void Report() const;

  // The best placement, with its simulated run when it was simulated, and
  // a note: where the chain started, then `what_it_did`.
  PlacerOutput Finish(const std::string& what_it_did);

  ChainState State() const;

  int64_t evaluations() const { return evaluations_; }
  int64_t moves() const { return moves_; }
  int64_t restarts() const { return restarts_; }
  int64_t resumed() const { return resumed_; }

 private:
  SimResult Evaluate(const Placement& placement, std::span<const int32_t> changed_ops);
  // With peers: every share due at this evaluation count, each moving the
  // chain to the best of all chains when that is better than its own.
  void ShareIfDue();
  void Adopt(const Placement& placement);
  SimResult RunInFull(const Placement& placement);

  const PlacementProblem& problem_;
  double overflow_scale_bytes_;
  SearchBudget budget_;
  std::chrono::steady_clock::time_point started_;
  double seconds_before_ = 0;
  std::string start_method_;
  bool start_fits_ = false;
  Placement current_, best_;
  SimResult current_result_, best_result_;
  SearchCost current_cost_, best_cost_;
  int64_t restart_after_ = 0;
  double coldness_ = 1;
  int64_t since_best_ = 0;
  int64_t evaluations_ = 0, moves_ = 0, restarts_ = 0, resumed_ = 0;
  int64_t next_share_ = 0;  // with peers: the evaluation count of the next share
  int64_t adopted_ = 0;     // shares that moved this chain to another's best
};

// Out of memory, half the moves of a chain (mcmc's, guided's) are
// exchanges: two units on different devices, each able to run on the
// other's, swap devices. A tight packing is often reached from a near one
// only by an exchange, which single moves make in two steps through a
// placement that overflows more (the packing puzzle of tests/memory_cases.h:
// mcmc out of memory on 2 of 6 seeds after 300 evaluations without them).
// Returns false (and draws nothing more) when the draw says a single move,
// or when no exchange was found in a few tries; else sets `next` and
// `changed_ops`.
bool ProposeExchange(const MovableUnits& movable, const Placement& current, Random& random, Placement& next,
                     std::vector<int32_t>& changed_ops);

// A chain from `start` (named `start_name` in its note: a learned method's
// best, a policy's zero-shot placement) instead of the baselines' best. A
// start that fits is where the chain starts, its run the budget's first
// evaluation; one that does not is ranked with the one-shot baselines (by
// the simulator, as the baselines are) and the chain starts from the better.
std::unique_ptr<MetropolisChain> MakeChainFrom(const PlacementProblem& problem, const MovableUnits& movable,
                                               const std::string& method, const Placement& start,
                                               const std::string& start_name);

}  // namespace devplace
