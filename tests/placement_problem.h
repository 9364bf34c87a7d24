// What the learned placers' tests share: a placement problem that owns its
// graph, cluster, cost model and simulator, and the tiny graph of
// independent chains whose best placement is known.
#pragma once

#include <string>
#include <utility>

#include "placers/placer.h"
#include "test_util.h"

namespace devplace::testing {

// `chains` independent chains of three 10 ms ops (on the slow-CPU
// cluster's GPUs): with four chains, two per GPU is best (60 ms).
inline Graph Chains(int chains) {
  Graph g;
  int64_t id = 0;
  for (int c = 0; c < chains; ++c) {
    int32_t prev = -1;
    for (int i = 0; i < 3; ++i) {
      int32_t op = g.AddOp(MakeOp(id++, "chain" + std::to_string(c) + "/op" + std::to_string(i), 1e10, 1000));
      if (prev >= 0) g.AddDataEdge(prev, 0, op);
      prev = op;
    }
  }
  g.Finalize("chains");
  return g;
}

// Every op at peak efficiency, so step times are easy to work out by hand.
struct OwnedProblem {
  Graph graph;
  Cluster cluster;
  CostModel cost;
  Simulator simulator;
  explicit OwnedProblem(Graph g, Cluster c = MakeTestCluster())
      : graph(std::move(g)), cluster(std::move(c)), cost(cluster, {}, PerfectEfficiency()), simulator(graph, cluster, cost) {}
  PlacementProblem get(uint64_t seed = 0) { return {graph, cluster, cost, simulator, seed}; }
};

}  // namespace devplace::testing
