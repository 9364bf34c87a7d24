// The inside of the dp_split placer (dp_split.cc), for its tests: the model
// its dynamic program optimises and the program itself, so that a brute
// force over every contiguous split can check the optimum it finds.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "placers/placer.h"

namespace devplace::dp_split {

// The most down-sets (ideals) the exact program enumerates; past it the
// placer collapses the graph to a chain.
inline constexpr int64_t kMaxDownSets = 20'000;
// The most pairs of nested down-sets (J inside I: one stage I \ J) the
// program visits; past it, too, the placer collapses to a chain. A graph of
// n nodes has at least (n + 1)(n + 2) / 2 of them.
inline constexpr int64_t kMaxNestedPairs = 10'000'000;
// A collapsed chain is cut into at most this many segments, so that the
// program on it visits at most about 2 million pairs.
inline constexpr int32_t kMaxChainSegments = 2'000;
static_assert(int64_t{kMaxChainSegments + 1} * (kMaxChainSegments + 2) / 2 <= kMaxNestedPairs,
              "a collapsed chain must never exceed the pair cap itself");
static_assert(kMaxChainSegments + 1 <= kMaxDownSets, "nor the down-set cap");

// The other end of an edge that leaves every stage: a unit on a device
// outside the stages (an op only the CPU runs, when the stages are GPUs).
inline constexpr int32_t kOutside = -1;

// Bytes that cross between nodes a and b (either direction), or between a
// and kOutside (b). One tensor counts once per consuming node.
struct SplitEdge {
  int32_t a = 0;
  int32_t b = 0;
  int64_t bytes = 0;
};

// What the dynamic program sees: nodes (units of placement) in a DAG, and an
// ordered list of stages, stage k on device stage_devices[k]. A split gives
// each node a stage, never a node an earlier stage than one of its
// predecessors. A stage's cost is the compute time of its nodes on its
// device plus the time of every byte crossing its boundary:
//   cost(k, A) = sum_{v in A} compute_us[k][v]
//              + transfer_us_per_byte[k] * sum of bytes of edges with exactly one end in A
// (an edge to kOutside always crosses), 0 for an empty stage. A split's
// objective is its costliest stage; it is allowed when each stage's
// sum_{v in A} memory_bytes[v] is at most capacity_bytes[k].
struct SplitModel {
  std::vector<std::vector<int32_t>> predecessors;  // [node]
  std::vector<std::vector<double>> compute_us;     // [stage][node]
  std::vector<int64_t> memory_bytes;               // [node]: parameters and forward outputs
  std::vector<int64_t> capacity_bytes;             // [stage]
  std::vector<double> transfer_us_per_byte;        // [stage]
  std::vector<SplitEdge> edges;
  // Filled by BuildSplitModel only: the device of each stage, and each op's
  // node, or kOutside for an op placed outside the stages.
  std::vector<int32_t> stage_devices;
  std::vector<int32_t> node_of_op;

  int32_t num_nodes() const { return static_cast<int32_t>(memory_bytes.size()); }
  int32_t num_stages() const { return static_cast<int32_t>(capacity_bytes.size()); }
};

inline constexpr double kNoSplit = std::numeric_limits<double>::infinity();

struct StageSplit {
  double objective_us = kNoSplit;      // kNoSplit when no split fits
  std::vector<int32_t> stage_of_node;  // empty when none fits
  bool found() const { return objective_us != kNoSplit; }
};

enum class OverCap : uint8_t { kNo = 0, kDownSets, kNestedPairs };

struct SplitSolution {
  // Whether the program gave up, and on which cap.
  OverCap over_cap = OverCap::kNo;
  int64_t down_sets = 0;     // enumerated; cap + 1 when over it
  int64_t nested_pairs = 0;  // visited; cap + 1 when over it
  // best[k - 1]: the optimal split onto the first k stages (later ones
  // empty), for k = 1 .. num_stages. Empty when over a cap.
  std::vector<StageSplit> best;
};

// The optimum of the model by dynamic programming over its down-sets:
// best[k][I] = min over down-sets J inside I of max(best[k-1][J], cost(k, I \ J)).
SplitSolution SolveSplit(const SplitModel& model);

// The placer's model of `problem` before any collapse: its co-location
// groups as nodes (a variable's group joined to the group of its first
// consumer), the GPUs in cluster order as stages (all devices when the
// cluster has no GPU).
SplitModel BuildSplitModel(const PlacementProblem& problem);

}  // namespace devplace::dp_split
