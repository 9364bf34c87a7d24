// A synthetic training-step graph of any size: layers of parallel branches
// with cross-links, each branch a variable, a matmul, its gradient and an
// Adam update, co-located as TensorFlow would. For benchmarks and as a small
// built-in example.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace devplace {

struct SyntheticOptions {
  int32_t num_ops = 1000;   // approximate; rounded to whole layers
  int32_t width = 4;        // parallel branches per layer
  int32_t batch = 64;
  uint64_t seed = 1;
};

Graph MakeSyntheticGraph(const SyntheticOptions& options);

}  // namespace devplace
