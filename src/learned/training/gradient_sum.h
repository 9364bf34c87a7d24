// Gradients summed across processes (learned/training/training_ranks.h):
// `train`'s ranks, each with its share of the graphs, and `place`'s
// controllers across processes, each with its own batch, take the same
// optimiser step from the mean of every part's gradients, so that their
// networks never part.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace devplace {

class TrainingRanks;

struct SharedGradients {
  int64_t parts = 0;     // parts that took part, on every rank
  bool dropped = false;  // some rank was stopped (its `dropped`)
};

// Sums this rank's gradients over the ranks and leaves in `module` those of
// the mean loss over every rank's `parts` (this rank's gradients are those
// of the sum of its parts' losses). A gradient no rank has stays undefined,
// as in one process (Adam skips such a parameter); a rank with none for a
// parameter others have adds zeros, as autograd would. When some rank is
// `dropped` (a stop) or no rank has a part, `module`'s gradients are left
// as they were: the caller takes no step.
SharedGradients ShareGradients(torch::nn::Module& module, int32_t parts, bool dropped, TrainingRanks& ranks);

}  // namespace devplace
