#include "exec/distributed/chain_exchange.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "exec/distributed/kill_point.h"
#include "util/error.h"

namespace devplace {
namespace {

// A best as fixed-width numbers in this machine's byte order (every rank
// runs the same build: World::Join compares the programs): tier, overflow
// bytes, step time in µs, op count, then the devices.
std::string Encode(const SharedBest& best) {
  const int64_t tier = static_cast<int64_t>(best.cost.tier);
  const int64_t ops = static_cast<int64_t>(best.placement.size());
  std::string bytes(4 * 8 + best.placement.size() * sizeof(int32_t), '\0');
  char* at = bytes.data();
  std::memcpy(at, &tier, 8);
  std::memcpy(at + 8, &best.cost.overflow_bytes, 8);
  std::memcpy(at + 16, &best.cost.step_time_us, 8);
  std::memcpy(at + 24, &ops, 8);
  if (ops > 0) std::memcpy(at + 32, best.placement.data(), best.placement.size() * sizeof(int32_t));
  return bytes;
}

SharedBest Decode(const std::string& bytes, int32_t num_ops, int32_t from) {
  const std::string where = "distributed run: rank " + std::to_string(from) + "'s best placement";
  if (bytes.size() != 32 + static_cast<size_t>(num_ops) * sizeof(int32_t)) {
    throw Error(where + " is " + std::to_string(bytes.size()) + " bytes, not a placement of " + std::to_string(num_ops) + " ops");
  }
  SharedBest best;
  int64_t tier = 0, ops = 0;
  std::memcpy(&tier, bytes.data(), 8);
  std::memcpy(&best.cost.overflow_bytes, bytes.data() + 8, 8);
  std::memcpy(&best.cost.step_time_us, bytes.data() + 16, 8);
  std::memcpy(&ops, bytes.data() + 24, 8);
  if (tier < 0 || tier > 2 || ops != num_ops) throw Error(where + " is damaged");
  best.cost.tier = static_cast<SearchCost::Tier>(tier);
  best.placement.resize(static_cast<size_t>(num_ops));
  if (num_ops > 0) std::memcpy(best.placement.data(), bytes.data() + 32, best.placement.size() * sizeof(int32_t));
  return best;
}

}  // namespace

uint64_t ChainSeed(uint64_t seed, int32_t rank) {
  if (rank == 0) return seed;
  // splitmix64's step: nearby ranks get unrelated seeds.
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(rank);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

StoreChainPeers::StoreChainPeers(World& world, int32_t num_ops, int64_t share_every)
    : world_(world), num_ops_(num_ops), share_every_(share_every), live_(static_cast<size_t>(world.size()), true) {}

std::vector<int32_t> StoreChainPeers::live_ranks() const {
  std::vector<int32_t> live;
  for (int32_t r = 0; r < world_.size(); ++r) {
    if (live_[static_cast<size_t>(r)]) live.push_back(r);
  }
  return live;
}

std::vector<SharedBest> StoreChainPeers::Gather(const std::string& name, const SharedBest& mine) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(world_.timeout_s());
  std::vector<SharedBest> bests;
  for (int32_t r = 0; r < world_.size(); ++r) {
    if (!live_[static_cast<size_t>(r)]) continue;
    if (r == world_.rank()) {
      bests.push_back(mine);
      continue;
    }
    const double left_s = std::max(0.001, std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count());
    std::optional<std::string> bytes = world_.Read(name + "/" + std::to_string(r), left_s);
    if (!bytes) {
      live_[static_cast<size_t>(r)] = false;
      if (world_.rank() == 0) {
        std::fprintf(stderr,
                     "devplace: distributed run: dropped rank %d's chain (no best within %s s, DEVPLACE_DIST_TIMEOUT_S); "
                     "the search goes on with the chains left\n",
                     r, ShowNumber(world_.timeout_s()).c_str());
      }
      continue;
    }
    bests.push_back(Decode(*bytes, num_ops_, r));
  }
  return bests;
}

std::vector<SharedBest> StoreChainPeers::Exchange(int64_t round, const SharedBest& mine) {
  KillPointForTests("DEVPLACE_TEST_KILL_WORKER", world_.rank(), shares_++);  // at its N-th share
  const std::string name = "chain/" + std::to_string(round);
  const std::string key = name + "/" + std::to_string(world_.rank());
  world_.Put(key, Encode(mine));
  std::vector<SharedBest> bests = Gather(name, mine);
  // Every live rank has left its best of this share, so it has read this
  // rank's of the last: that one can go.
  if (!previous_key_.empty()) world_.Delete(previous_key_);
  previous_key_ = key;
  return bests;
}

std::vector<SharedBest> StoreChainPeers::Final(const SharedBest& mine) {
  if (world_.rank() != 0) {
    world_.Put("chain/final/" + std::to_string(world_.rank()), Encode(mine));
    return {mine};
  }
  return Gather("chain/final", mine);
}

}  // namespace devplace
