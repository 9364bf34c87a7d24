// The chains of one search in other processes (a run across processes,
// exec/distributed/chain_exchange.h): independent Metropolis chains, one a
// rank, that share their best placements at fixed evaluation counts, so
// that a fixed seed and evaluation budget give the same result every run.
// Torch-free and transport-free: the chain (placers/metropolis_chain.h)
// only calls this.
#pragma once

#include <cstdint>
#include <vector>

#include "placers/search_cost.h"
#include "sim/placement.h"

namespace devplace {

struct SharedBest {
  Placement placement;
  SearchCost cost;
};

class ChainPeers {
 public:
  virtual ~ChainPeers() = default;
  // Evaluations between shares: a chain shares when its evaluation count
  // first reaches each multiple of it below its budget.
  virtual int64_t share_every() const = 0;
  // Sends this chain's best at share number `round` and returns the best of
  // every chain still answering, this one's included, in rank order.
  virtual std::vector<SharedBest> Exchange(int64_t round, const SharedBest& mine) = 0;
  // The chain has spent its budget: sends its best for the last time.
  // Rank 0 gets every chain's still answering, in rank order (its own
  // included); another rank gets its own.
  virtual std::vector<SharedBest> Final(const SharedBest& mine) = 0;
};

// The best of `bests` (the first in rank order among equals).
inline size_t BestOf(const std::vector<SharedBest>& bests) {
  size_t best = 0;
  for (size_t i = 1; i < bests.size(); ++i) {
    if (Better(bests[i].cost, bests[best].cost)) best = i;
  }
  return best;
}

}  // namespace devplace
