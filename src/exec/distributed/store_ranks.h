// Some ranks of a World as one TrainingRanks (learned/training/training_ranks.h):
// their sums, rank 0's word to all and their reports to it, carried as keys
// of rank 0's c10d store. `train`'s data-parallel ranks are every rank of
// the world; `place`'s controllers across processes (--controllers) are the
// first rank of each group. Torch-free header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "learned/training/training_ranks.h"

namespace devplace {

class World;

// `members`: the world's ranks taking part, in order, the first being world
// rank 0 (which adds the sums and holds the store); TrainingRanks::rank() is
// this rank's place among them. `prefix` keeps their keys apart from other
// messages; `lost` ends the line that says a member stopped answering (what
// the run does about it). The world must outlive this (or be handed over
// with Own).
class StoreRanks : public TrainingRanks {
 public:
  StoreRanks(World& world, std::vector<int32_t> members, std::string prefix, std::string lost);
  ~StoreRanks() override;
  // Keeps `world` alive as long as this.
  void Own(std::unique_ptr<World> world);

  int32_t rank() const override { return index_; }
  int32_t size() const override { return static_cast<int32_t>(members_.size()); }
  void Sum(std::vector<double>& values) override;
  std::string FromRankZero(const std::string& bytes) override;
  std::vector<std::string> ToRankZero(const std::string& bytes) override;

 private:
  std::string WaitForRankZero(const std::string& key);
  std::string FromMember(const std::string& key, int32_t member, const char* what);

  World& world_;
  std::unique_ptr<World> owned_;
  std::vector<int32_t> members_;
  int32_t index_ = 0;
  std::string prefix_;
  std::string lost_;
  int64_t sums_ = 0;
  int64_t broadcasts_ = 0;
  int64_t gathers_ = 0;
};

}  // namespace devplace
