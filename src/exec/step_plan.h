// What one placement makes of a graph for the executor, worked out before
// the step runs: tensor numbering, how many times each device reads each
// tensor, which other devices each tensor goes to, how many inputs each op
// waits for, each device's persistent memory, and the ops' rank for ties.
#pragma once

#include <cstdint>
#include <vector>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "sim/placement.h"

namespace devplace {

// Each op's rank: its position in the graph's canonical order
// (graph/canonical_order.h), the simulator's tie rule.
std::vector<int32_t> RankOps(const Graph& graph);

struct StepPlan {
  int32_t num_devices = 0;
  // Tensor t is output t - tensor_begin[op] of op; size ops + 1.
  std::vector<int32_t> tensor_begin;
  std::vector<int32_t> tensor_producer;
  std::vector<int64_t> tensor_bytes;        // as sent to another device
  std::vector<int64_t> tensor_local_bytes;  // allocated where produced: 0 for a view of persistent memory
  std::vector<int32_t> reads;               // [tensor * num_devices + device]: data edges reading it there
  std::vector<uint64_t> destinations;       // tensor -> other devices that read it, one bit each
  std::vector<int32_t> pending_inputs;      // op -> data and control in-edges
  std::vector<int64_t> persistent_bytes;    // device -> persistent memory of its ops (saturated)
  std::vector<int64_t> start_bytes;         // op -> outputs and scratch allocated when it starts (saturated)

  int32_t num_tensors() const { return static_cast<int32_t>(tensor_producer.size()); }
  int32_t tensor(int32_t op, int32_t output) const { return tensor_begin[op] + output; }
};

// `placement` must have passed CheckPlacement.
StepPlan MakeStepPlan(const Graph& graph, const Cluster& cluster, const Placement& placement);

}  // namespace devplace
