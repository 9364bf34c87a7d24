// Small cases where memory decides (issue 47): used by the tests of every
// search that must find a placement that fits.
#pragma once

#include <string>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "placement_problem.h"
#include "test_util.h"

namespace devplace::testing {

// A chain of 12 layers of 100 MB parameters each (1.2 GB, more than a 1 GB
// GPU holds), 1 ms each on a GPU, passing 30 MB between layers (30 ms on a
// link): all on one GPU is the fastest step by far, and out of memory.
inline Graph HeavyChainOfBigTensors() {
  Graph g;
  int32_t prev = -1;
  for (int i = 0; i < 12; ++i) {
    Op op = MakeOp(i, "layer" + std::to_string(i), 1e9, 30'000'000);
    op.persistent_bytes = 100'000'000;
    const int32_t next = g.AddOp(op);
    if (prev >= 0) g.AddDataEdge(prev, 0, next);
    prev = next;
  }
  g.Finalize("heavy_chain");
  return g;
}

// Fifteen independent 10 ms ops whose parameters (2,970 MB) fit three 1 GB
// GPUs only when packed tightly: drawn as three bins of 990 MB, each cut
// into five, and shuffled. Every one-shot placer overflows (first fit,
// filling devices in turn, partitioning, and dp_split, which collapses
// 2^15 down-sets to a chain), so the search must find a packing itself.
inline Graph PackingPuzzle() {
  Graph g;
  int64_t id = 0;
  for (int64_t mb : {221, 15, 107, 717, 90, 125, 104, 106, 270, 36, 552, 122, 47, 187, 271}) {
    Op op = MakeOp(id, "param" + std::to_string(id), 1e10, 4000);
    op.persistent_bytes = mb * 1'000'000;
    g.AddOp(op);
    ++id;
  }
  g.Finalize("packing");
  return g;
}

inline Cluster ThreeGpusOfOneGb() {
  Cluster c;
  c.name = "three_gpus";
  for (int d = 0; d < 3; ++d) c.devices.push_back(MakeDevice("gpu:" + std::to_string(d), DeviceKind::kGpu));
  c.links = {{0, 1, 1e9, 10, -1}, {0, 2, 1e9, 10, -1}, {1, 2, 1e9, 10, -1}};
  c.Finalize("three GPUs");
  return c;
}

}  // namespace devplace::testing
