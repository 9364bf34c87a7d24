// The processes of one data-parallel training (`devplace train` under
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), as the trainer sees them:
// each rank trains its share of the graphs, the ranks sum their gradients
// every optimiser step so that every rank's network stays the same, and
// rank 0 alone writes the policy file and the checkpoint. Transport-free:
// exec/distributed/train_world.h carries it over torch.distributed's store.
// No torch in this header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace devplace {

class TrainingRanks {
 public:
  virtual ~TrainingRanks() = default;
  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;

  // Replaces `values` with their element-wise sum over every rank (each
  // rank gives as many), added on rank 0 in rank order and sent back, so
  // that every rank gets the same bits. Throws Error (one line) when a rank
  // is lost or gave another count.
  virtual void Sum(std::vector<double>& values) = 0;

  // Rank 0's `bytes`, on every rank (a worker's own argument is ignored);
  // rank 0 returns once every worker has them, or has not answered in time.
  virtual std::string FromRankZero(const std::string& bytes) = 0;

  // Every rank's `bytes` in rank order, on rank 0; empty on the others
  // (which do not wait for rank 0).
  virtual std::vector<std::string> ToRankZero(const std::string& bytes) = 0;
};

// The graphs of --graphs are dealt round robin: graph g is trained on rank
// g mod WORLD_SIZE.
inline bool RankTrainsGraph(const TrainingRanks* ranks, int64_t graph) {
  return ranks == nullptr || graph % ranks->size() == ranks->rank();
}

}  // namespace devplace
