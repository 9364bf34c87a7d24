#include "sim/lower_bound.h"

#include <algorithm>
#include <vector>

namespace devplace {

LowerBound StepTimeLowerBound(const Graph& graph, const Cluster& cluster, const CostModel& cost) {
  const int32_t n = graph.num_ops();
  std::vector<double> fastest_us(n, kCannotRun);
  for (int32_t op = 0; op < n; ++op) {
    for (int32_t d = 0; d < cluster.num_devices(); ++d) fastest_us[op] = std::min(fastest_us[op], cost.OpTimeUs(graph.op(op), d));
  }
  LowerBound bound;
  std::vector<double> finish_us(n, 0);
  for (int32_t op : graph.topological_order()) {
    double start_us = 0;
    for (int32_t e : graph.in_data_edges(op)) start_us = std::max(start_us, finish_us[graph.data_edges()[e].src]);
    for (int32_t src : graph.control_predecessors(op)) start_us = std::max(start_us, finish_us[src]);
    finish_us[op] = start_us + fastest_us[op];
    bound.critical_path_us = std::max(bound.critical_path_us, finish_us[op]);
  }
  // Every op keeps some device busy for at least its fastest time; the
  // cluster runs at most sum(parallel_ops) ops at once.
  // Summed smallest first, so the bound does not depend on the order of the
  // graph's file (floating-point sums depend on their order).
  std::vector<double> sorted_us = fastest_us;
  std::sort(sorted_us.begin(), sorted_us.end());
  double total_us = 0;
  for (double t : sorted_us) total_us += t;
  int32_t slots = 0;
  for (const Device& d : cluster.devices) slots += d.parallel_ops;
  bound.work_us = total_us / slots;
  return bound;
}

}  // namespace devplace
