// Helpers shared by the tests: small hand-checkable graphs and clusters, and
// (from test_files.h) temporary files.
#pragma once

#include <cstdio>
#include <string>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "graph/graph.h"
#include "test_files.h"

namespace devplace::testing {

// An op of `flops` FLOPs writing one float32 tensor of `output_bytes`.
inline Op MakeOp(int64_t id, const std::string& name, double flops, int64_t output_bytes) {
  Op op;
  op.id = id;
  op.name = name;
  op.type = "MatMul";
  op.flops = flops;
  TensorSpec t;
  t.shape = {output_bytes / 4};
  t.bytes = output_bytes;
  op.outputs.push_back(t);
  return op;
}

// Devices that make times easy to check by hand: 1e12 FLOP/s at 100%
// efficiency (so 1e6 FLOPs take 1 us), memory traffic that never dominates,
// no launch overhead.
inline Device MakeDevice(const std::string& name, DeviceKind kind, int64_t memory_bytes = 1'000'000'000) {
  Device d;
  d.name = name;
  d.kind = kind;
  d.peak_flops_per_s = 1e12;
  d.memory_bandwidth_bytes_per_s = 1e18;
  d.memory_bytes = memory_bytes;
  d.launch_overhead_us = 0;
  d.parallel_ops = 1;
  return d;
}

// cpu:0, gpu:0, gpu:1; host links of 1e9 B/s (1 byte per ns) and 0.5 us
// latency, a peer link between the GPUs. With `shared_bus`, both host links
// share one bus.
inline Cluster MakeTestCluster(bool shared_bus = false, bool peer_link = true) {
  Cluster c;
  c.name = "test";
  c.devices = {MakeDevice("cpu:0", DeviceKind::kCpu), MakeDevice("gpu:0", DeviceKind::kGpu),
               MakeDevice("gpu:1", DeviceKind::kGpu)};
  int32_t bus = -1;
  if (shared_bus) {
    c.buses.push_back("pcie");
    bus = 0;
  }
  c.links.push_back({0, 1, 1e9, 0.5, bus});
  c.links.push_back({0, 2, 1e9, 0.5, bus});
  if (peer_link) c.links.push_back({1, 2, 1e9, 0.5, -1});
  c.Finalize("test cluster");
  return c;
}

// A CPU ten times slower than its two GPUs (1e11 vs 1e12 FLOP/s), all
// pairs linked at 1e9 B/s with 10 us latency.
inline Cluster MakeSlowCpuCluster(int64_t gpu_memory_bytes = 1'000'000'000) {
  Cluster c;
  c.name = "slowcpu";
  c.devices = {MakeDevice("cpu:0", DeviceKind::kCpu, 100'000'000'000), MakeDevice("gpu:0", DeviceKind::kGpu, gpu_memory_bytes),
               MakeDevice("gpu:1", DeviceKind::kGpu, gpu_memory_bytes)};
  c.devices[0].peak_flops_per_s = 1e11;
  c.links = {{0, 1, 1e9, 10, -1}, {0, 2, 1e9, 10, -1}, {1, 2, 1e9, 10, -1}};
  c.Finalize("slow cpu cluster");
  return c;
}

// Every op at 100% of peak, so times are FLOPs / peak exactly.
inline EfficiencyTable PerfectEfficiency() {
  EfficiencyTable table(1.0, 1.0);
  for (int k = 0; k < kNumDeviceKinds; ++k) table.memory[k] = 1.0;
  return table;
}

}  // namespace devplace::testing
