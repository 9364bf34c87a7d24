// What HDP's Grouper sees of a graph (Mirhoseini et al. 2018): the graph's
// ops folded into co-location units, each described by its op type, its
// output shapes and the positions of its neighbours, plus what the group
// embedding needs (per-op types, output sizes, the unit-to-unit edge list).
// Built once per graph; plain data, no torch, so it builds and tests fast.
//
// A unit is the smallest thing that may move: the ops that share a
// non-empty `colocation_group` (the only "must share a device" the graph
// format encodes: a variable and its update, an op and its reference-typed
// input are written as one co-location group), or a single op. A unit may
// run only on the device kinds every one of its ops can run on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "graph/graph.h"

namespace devplace {

struct OpFeatures {
  // The paper's description: 6 outputs x 4 dimensions, 6 predecessors and 6
  // successors, the most common op types embedded (the rest share one id).
  static constexpr int kOutputs = 6;
  static constexpr int kDims = 4;
  static constexpr int kShapeFeatures = kOutputs * kDims;
  static constexpr int kNeighbours = 6;  // each way
  static constexpr int kAdjacencyFeatures = 2 * kNeighbours;
  static constexpr int kMaxTypes = 64;   // vocabulary size, "other" included

  int32_t num_ops = 0;
  int32_t num_units = 0;

  // Ops and units. Units are numbered by their first op in topological order.
  std::vector<int32_t> unit_of_op;        // [op]
  std::vector<int32_t> unit_op_offsets;   // [unit + 1]: unit u's ops are unit_ops[offsets[u] .. offsets[u+1])
  std::vector<int32_t> unit_ops;          // in topological order within a unit
  std::vector<DeviceKindMask> unit_kinds; // [unit]: kinds every op of the unit can run on, of those the cluster has

  // The vocabulary: the graph's most common op types, then "other" if any
  // type did not fit.
  std::vector<std::string> type_names;
  std::vector<int32_t> op_type;    // [op]: index into type_names
  std::vector<int32_t> unit_type;  // [unit]: the type of its heaviest op (ties: the first)

  // [unit][kShapeFeatures]: the unit's largest outputs, first four
  // dimensions each (further ones folded into the fourth), log1p-scaled / 10;
  // 0 where there is no such output or dimension, -1 for an unknown (negative)
  // dimension.
  std::vector<float> shape_features;
  // [unit][kAdjacencyFeatures]: the positions (unit index / units) of the
  // nearest kNeighbours predecessor units in topological order, then of the
  // nearest kNeighbours successors; -1 where there are fewer.
  std::vector<float> adjacency;

  // [unit]: where the unit sits in a locality order, in [0, 1): forward
  // units in the chain-following order (graph/group_order.h), every other
  // unit (backward, update) right after the forward unit it exchanges the
  // most bytes with (or the nearest one through the edges), positions spaced
  // by the units' share of count and FLOPs. Units close in this order are
  // close in the network: a layer's forward and backward ops sit together,
  // and consecutive stretches are layers. The Grouper's locality prior reads it.
  std::vector<float> unit_position;

  // The bytes of all outputs of each unit's ops: what a group's output-size
  // sum adds up.
  std::vector<float> unit_output_bytes;  // [unit]

  // Data edges between different units, one per (src, dst) unit pair, with
  // how many op-level data edges it stands for.
  std::vector<int32_t> edge_src, edge_dst;
  std::vector<float> edge_count;

  int32_t num_types() const { return static_cast<int32_t>(type_names.size()); }
  int32_t num_edges() const { return static_cast<int32_t>(edge_src.size()); }
};

// Throws Error naming the co-location group or op that no device of
// `cluster` can run. `graph` must be finalized.
OpFeatures BuildOpFeatures(const Graph& graph, const Cluster& cluster);

}  // namespace devplace
