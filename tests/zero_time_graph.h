// A random graph for checking that every way to a step time agrees where
// ops take no time (incremental_sim_test.cc, mcmc_placer_test.cc).
#pragma once

#include <algorithm>
#include <string>

#include "cost/op_time_table.h"
#include "graph/graph.h"
#include "util/random.h"

namespace devplace::testing {

// A random graph whose steps hold many events at one instant: a third of
// its ops take no time (op-times entries of 0 us, as a profile of a
// training step has for its no-ops and views), the others whole
// microseconds, its tensors are often empty (a hop of only latency, or of
// nothing on a link without latency), and it has control edges,
// co-location groups, CPU-only ops, parameters and scratch memory.
struct TimedGraph {
  Graph graph;
  OpTimeTable op_times;
};

inline TimedGraph ZeroTimeGraph(int32_t num_ops, uint64_t seed) {
  Random random(seed);
  TimedGraph timed;
  // Types by first-output shape: the table keys on both.
  const char* const types[] = {"Zero", "Short", "Long"};
  for (int k = 0; k < 3; ++k) {
    const double gpu_us[] = {0, 1, 10};
    const double cpu_us[] = {0, 3, 40};
    timed.op_times.Add(types[k], {k + 1}, DeviceKind::kGpu, gpu_us[k]);
    timed.op_times.Add(types[k], {k + 1}, DeviceKind::kCpu, cpu_us[k]);
  }
  timed.op_times.set_host_contention(0.5);  // only where devices own cores
  Graph& graph = timed.graph;
  graph.name = "zero-time graph";
  const int64_t sizes_bytes[] = {0, 0, 0, 1000, 4000, 250000};
  for (int32_t i = 0; i < num_ops; ++i) {
    Op op;
    op.id = i;
    op.name = "op" + std::to_string(i);
    const int k = random.Uniform() < 0.35 ? 0 : 1 + static_cast<int>(random.Below(2));
    op.type = types[k];
    op.phase = static_cast<Phase>(random.Below(kNumPhases));
    const int outputs = 1 + static_cast<int>(random.Below(2));
    for (int o = 0; o < outputs; ++o) {
      TensorSpec t;
      t.bytes = sizes_bytes[random.Below(6)];
      t.shape = {o == 0 ? k + 1 : 7};
      t.aliases_persistent = random.Uniform() < 0.05;  // a variable's value
      op.outputs.push_back(t);
    }
    if (random.Uniform() < 0.2) op.persistent_bytes = 1000 * static_cast<int64_t>(1 + random.Below(400));
    for (const TensorSpec& t : op.outputs) {
      if (t.aliases_persistent) op.persistent_bytes = std::max(op.persistent_bytes, t.bytes);
    }
    if (random.Uniform() < 0.2) op.temporary_bytes = 1000 * static_cast<int64_t>(1 + random.Below(100));
    if (random.Uniform() < 0.05) op.device_kinds = MaskOf(DeviceKind::kCpu);
    if (random.Uniform() < 0.12) op.colocation_group = "group" + std::to_string(random.Below(8));
    graph.AddOp(op);
    if (i == 0 || random.Uniform() < 0.03) continue;  // a source
    // Mostly recent producers, so that the graph is deep, not a fan.
    auto producer = [&] {
      const int32_t window = std::min<int32_t>(i, 12);
      return i - 1 - static_cast<int32_t>(random.Below(window));
    };
    const int inputs = 1 + static_cast<int>(random.Below(3));
    for (int n = 0; n < inputs; ++n) {
      const int32_t src = producer();
      graph.AddDataEdge(src, static_cast<int32_t>(random.Below(graph.op(src).outputs.size())), i);
    }
    if (random.Uniform() < 0.15) graph.AddControlEdge(producer(), i);
  }
  graph.Finalize("zero-time graph");
  return timed;
}

}  // namespace devplace::testing
