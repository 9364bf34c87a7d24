// Independent search chains, one a rank, sharing their best placements
// through the world's store (placers/chain_peers.h): at share n each rank
// leaves its best under chain/n/RANK and reads every other rank's. A rank
// that has not left its best within the world's timeout is dropped (a
// line on rank 0's stderr) and not waited for again.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/distributed/world.h"
#include "placers/chain_peers.h"

namespace devplace {

// Evaluations between shares: 20 shares in the default 2,000-evaluation
// budget, each a store round of one placement a rank.
inline constexpr int64_t kShareEveryEvaluations = 100;

// The seed of rank `rank`'s chain: rank 0 keeps the run's seed, so that its
// chain is the one-process chain until the first share.
uint64_t ChainSeed(uint64_t seed, int32_t rank);

class StoreChainPeers : public ChainPeers {
 public:
  // `world` must outlive it. `num_ops`: every placement received must be
  // of this many ops.
  StoreChainPeers(World& world, int32_t num_ops, int64_t share_every = kShareEveryEvaluations);
  int64_t share_every() const override { return share_every_; }
  std::vector<SharedBest> Exchange(int64_t round, const SharedBest& mine) override;
  std::vector<SharedBest> Final(const SharedBest& mine) override;

  std::vector<int32_t> live_ranks() const;

 private:
  // Every other live rank's best under `name` (this rank's is `mine`),
  // dropping those that do not answer in time.
  std::vector<SharedBest> Gather(const std::string& name, const SharedBest& mine);
  World& world_;
  int32_t num_ops_;
  int64_t share_every_;
  std::vector<bool> live_;
  std::string previous_key_;  // this rank's best of the last share
  int64_t shares_ = 0;
};

}  // namespace devplace
