// `devplace compare` across processes: the methods are dealt round robin,
// method i to rank i % WORLD_SIZE; each worker sends rank 0 what its methods
// gave (bytes the caller encodes), and rank 0 prints the one table. A rank
// that sends nothing for one of its methods within the world's timeout is
// dropped (a line on rank 0's stderr) and rank 0 runs that method and the
// rank's later ones itself, so no method's row is lost. Torch-free header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/distributed/place_world.h"

namespace devplace {

class World;

class CompareWorld {
 public:
  explicit CompareWorld(std::unique_ptr<World> world);
  ~CompareWorld();

  int32_t rank() const;
  int32_t size() const;
  // The rank that runs the method at `index` in the command's list.
  int32_t RankOf(size_t index) const { return static_cast<int32_t>(index % static_cast<size_t>(size())); }

  // A worker: method `index`'s result, for rank 0.
  void Send(size_t index, const std::string& bytes);
  // Rank 0: method `index`'s result from its rank, or nullopt when that
  // rank sent none within the timeout or was dropped before (rank 0 then
  // runs `method` itself; the first drop says so on stderr).
  std::optional<std::string> Receive(size_t index, const std::string& method);

 private:
  std::unique_ptr<World> world_;
  std::vector<bool> live_;  // rank 0's view, by rank
  int64_t sent_ = 0;        // a worker's results sent so far
};

// Without the variables (or WORLD_SIZE=1): nullptr, nothing changed. Else
// joins (throwing Error for the world's faults, as JoinPlaceWorld); the
// inputs' `method` is the command's method list.
std::unique_ptr<CompareWorld> JoinCompareWorld(const PlaceWorldInputs& inputs);

}  // namespace devplace
