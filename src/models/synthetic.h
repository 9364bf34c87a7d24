// A synthetic training-step graph of any size: layers of parallel branches
// with cross-links, each branch a variable, a matmul, its gradient and an
// Adam update, co-located as TensorFlow would. For benchmarks and as a small
// built-in example.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace devplace {

struct SyntheticOptions {
  int64_t num_ops = 1000;  // approximate; rounded to whole layers (at least one)
  int64_t width = 4;       // parallel branches per layer
  int64_t batch = 64;
  // The widest a layer may be: each branch's width is drawn from
  // hidden/8 x 1..8 (at least 1). The default's parameters (3.6 TiB at a
  // million ops) fit no cluster; a smaller one makes a large graph that
  // fits (docs/models.md).
  int64_t hidden = 2048;
  uint64_t seed = 1;
};

// The bounds MakeSyntheticGraph accepts (docs/models.md): the largest graph
// has about a million ops and no tensor above a few GB.
inline constexpr int64_t kMaxSyntheticOps = 1'000'000;
inline constexpr int64_t kMaxSyntheticWidth = 1024;
inline constexpr int64_t kMaxSyntheticBatch = 65536;
inline constexpr int64_t kMaxSyntheticHidden = 65536;

// Throws Error when an option is outside its bounds.
Graph MakeSyntheticGraph(const SyntheticOptions& options);

}  // namespace devplace
