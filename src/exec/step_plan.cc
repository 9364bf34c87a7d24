#include "exec/step_plan.h"

#include <algorithm>
#include <cassert>
#include <string>

#include "sim/simulator.h"  // SaturatingAddBytes

namespace devplace {
namespace {

// Name order with runs of digits compared as numbers ("cell_2" before
// "cell_10"), as the simulator's.
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = a[i] >= '0' && a[i] <= '9', db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && a[ie] >= '0' && a[ie] <= '9') ++ie;
      while (je < b.size() && b[je] >= '0' && b[je] <= '9') ++je;
      size_t is = i, js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      const int c = a.compare(is, ie - is, b, js, je - js);
      if (c != 0) return c < 0;
      i = ie, j = je;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i, ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;
}

}  // namespace

std::vector<int32_t> RankOps(const Graph& graph) {
  const int32_t n = graph.num_ops();
  const std::vector<int32_t>& topological = graph.topological_order();
  std::vector<int32_t> height(n, 1);
  for (auto it = topological.rbegin(); it != topological.rend(); ++it) {
    const int32_t op = *it;
    for (int32_t e : graph.out_data_edges(op)) height[op] = std::max(height[op], height[graph.data_edges()[e].dst] + 1);
    for (int32_t next : graph.control_successors(op)) height[op] = std::max(height[op], height[next] + 1);
  }
  std::vector<int32_t> order(n);
  for (int32_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    if (height[a] != height[b]) return height[a] > height[b];
    return NaturalLess(graph.op(a).name, graph.op(b).name);
  });
  std::vector<int32_t> rank(n);
  for (int32_t i = 0; i < n; ++i) rank[order[i]] = i;
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
