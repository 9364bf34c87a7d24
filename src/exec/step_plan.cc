#include "exec/step_plan.h"

#include <algorithm>
#include <cassert>
#include <string>

#include "graph/canonical_order.h"
#include "sim/simulator.h"  // SaturatingAddBytes

namespace devplace {
std::vector<int32_t> RankOps(const Graph& graph) {
  const std::vector<int32_t> order = CanonicalOrder(graph);
  std::vector<int32_t> rank(order.size());
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = static_cast<int32_t>(i);
  return rank;
}

StepPlan MakeStepPlan(const Graph& graph, const Cluster& cluster, const Placement& placement) {
  const int32_t n = graph.num_ops();
  const int32_t devices = cluster.num_devices();
  StepPlan plan;
  plan.num_devices = devices;
  plan.tensor_begin.resize(n + 1, 0);
  for (int32_t op = 0; op < n; ++op) {
    plan.tensor_begin[op + 1] = plan.tensor_begin[op] + static_cast<int32_t>(graph.op(op).outputs.size());
  }
  const int32_t tensors = plan.tensor_begin[n];
  plan.tensor_producer.resize(tensors);
  plan.tensor_bytes.resize(tensors);
  plan.tensor_local_bytes.resize(tensors);
  plan.start_bytes.resize(n);
  plan.persistent_bytes.assign(devices, 0);
  for (int32_t op = 0; op < n; ++op) {
    const Op& o = graph.op(op);
    int64_t start = o.temporary_bytes;
    for (size_t i = 0; i < o.outputs.size(); ++i) {
      const int32_t t = plan.tensor_begin[op] + static_cast<int32_t>(i);
      plan.tensor_producer[t] = op;
      plan.tensor_bytes[t] = o.outputs[i].bytes;
      plan.tensor_local_bytes[t] = o.outputs[i].aliases_persistent ? 0 : o.outputs[i].bytes;
      start = SaturatingAddBytes(start, plan.tensor_local_bytes[t]);
    }
    plan.start_bytes[op] = start;
    const int32_t d = placement[op];
    plan.persistent_bytes[d] = SaturatingAddBytes(plan.persistent_bytes[d], o.persistent_bytes);
  }
  plan.reads.assign(static_cast<size_t>(tensors) * devices, 0);
  plan.destinations.assign(tensors, 0);
  plan.pending_inputs.assign(n, 0);
  for (const DataEdge& e : graph.data_edges()) {
    const int32_t t = plan.tensor(e.src, e.src_output);
    const int32_t d = placement[e.dst];
    ++plan.reads[static_cast<size_t>(t) * devices + d];
    if (d != placement[e.src]) plan.destinations[t] |= uint64_t{1} << d;
    ++plan.pending_inputs[e.dst];
  }
  for (const ControlEdge& e : graph.control_edges()) ++plan.pending_inputs[e.dst];
  return plan;
}

}  // namespace devplace
