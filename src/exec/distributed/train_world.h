// `devplace train` across processes: data-parallel training over
// torch.distributed's c10d store. Every rank runs the same command, trains
// its share of the graphs (learned/training/training_ranks.h) and sums its
// gradients with the others' every optimiser step; rank 0 writes every
// file. Torch-free header.
#pragma once

#include <memory>
#include <vector>

#include "learned/training/training_ranks.h"

namespace devplace {

struct WorldFact;  // exec/distributed/world.h

// Without RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (or with WORLD_SIZE=1):
// null, one process. Else joins the world, refusing ranks whose `facts`
// differ (World::Join), and returns this rank's side of it. Throws Error
// for the world's faults.
std::shared_ptr<TrainingRanks> JoinTrainWorld(const std::vector<WorldFact>& facts);

}  // namespace devplace
