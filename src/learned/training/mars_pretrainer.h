// `devplace pretrain --method mars`: Mars's encoder trained by Deep Graph
// Infomax on graphs alone (no simulator, no step times), written as an
// encoder file (learned/networks/mars_encoder.h). No torch in this header: the command
// line includes it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace devplace {

struct MarsPretrainOptions {
  std::string encoder_out;  // the encoder file; its checkpoint is encoder_out + ".checkpoint"
  int64_t hidden = 64;      // the GCN's width
  int64_t layers = 2;       // GCN layers
  double learning_rate = 0.001;
  // Budget: stop after this many steps or seconds (0: no such bound), or
  // when the loss has not improved for `patience` steps (early stopping).
  int64_t max_steps = 0;
  double max_seconds = 0;
  int64_t patience = 50;
  uint64_t seed = 1;
  double checkpoint_seconds = 30;  // between saves of the file and checkpoint
  bool resume = false;             // continue from encoder_out + ".checkpoint"
};

struct MarsPretrainProgress {
  int64_t step = 0;
  double loss = 0;       // DGI's loss this step, mean over the graphs
  double best_loss = 0;  // the lowest so far: the encoder file holds that encoder
  double accuracy = 0;   // real and corrupted units told apart this step
  double seconds = 0;
};

struct MarsPretrainResult {
  MarsPretrainProgress last;
  bool stopped_early = false;  // the loss stopped improving before the budget ran out
};

// Throws Error when an option is out of range, a graph cannot be read as
// units, or a checkpoint to resume from is missing, damaged, or of other
// graphs or sizes.
MarsPretrainResult PretrainMarsEncoder(const std::vector<const Graph*>& graphs, const MarsPretrainOptions& options,
                                       const std::function<void(const MarsPretrainProgress&)>& on_step);

}  // namespace devplace
