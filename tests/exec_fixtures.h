// What the executor's tests share: this machine's CPUs as a cluster, and
// small graphs built op by op.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "exec/host_cpus.h"
#include "graph/graph.h"

namespace devplace {
namespace testing {

// CPU devices of this machine, each owning its own cores (one each when
// there are enough). Empty when the machine has fewer cores than devices.
inline Cluster HostCluster(int32_t devices, int64_t memory_bytes = int64_t{1} << 30) {
  const std::vector<int32_t> cores = UsableCores();
  Cluster cluster;
  cluster.name = "test_host";
  if (static_cast<int32_t>(cores.size()) < devices) return cluster;
  const auto sets = SplitCores(cores, devices);
  for (int32_t i = 0; i < devices; ++i) {
    Device d;
    d.name = "cpu:" + std::to_string(i);
    d.kind = DeviceKind::kCpu;
    d.peak_flops_per_s = 1e11;
    d.memory_bandwidth_bytes_per_s = 1e10;
    d.memory_bytes = memory_bytes;
    d.cores = {sets[i].front()};  // one worker each, so that a device runs one op at a time
    cluster.devices.push_back(d);
  }
  for (int32_t i = 0; i < devices; ++i) {
    for (int32_t j = i + 1; j < devices; ++j) cluster.links.push_back({i, j, 5e9, 10, -1});
  }
  cluster.Finalize("test cluster");
  return cluster;
}

#define REQUIRE_CLUSTER(cluster, n) \
  if ((cluster).num_devices() < (n)) GTEST_SKIP() << "needs " << (n) << " cores"

inline int32_t AddOp(Graph& g, const std::string& name, const std::string& type, Phase phase, double flops,
                     std::vector<TensorSpec> outputs, std::vector<int32_t> inputs) {
  Op op;
  op.id = g.num_ops();
  op.name = name;
  op.type = type;
  op.phase = phase;
  op.flops = flops;
  op.outputs = std::move(outputs);
  const int32_t index = g.AddOp(std::move(op));
  for (int32_t input : inputs) g.AddDataEdge(input, 0, index);
  return index;
}

// A chain of square matmuls: x -> mm0 -> mm1 -> ..., each reading a weight.
inline Graph MatmulChain(int32_t length, int64_t n) {
  Graph g;
  g.name = "chain";
  int32_t previous = AddOp(g, "x", "IteratorGetNext", Phase::kForward, 0, {TensorSpec::Make({n, n})}, {});
  for (int32_t i = 0; i < length; ++i) {
    const int32_t w =
        AddOp(g, "w" + std::to_string(i), "VariableV2", Phase::kForward, 0, {TensorSpec::Make({n, n})}, {});
    g.mutable_op(w).outputs[0].aliases_persistent = true;
    g.mutable_op(w).persistent_bytes = n * n * 4;
    previous = AddOp(g, "mm" + std::to_string(i), "MatMul", Phase::kForward, 2.0 * n * n * n,
                     {TensorSpec::Make({n, n})}, {previous, w});
  }
  g.Finalize("chain");
  return g;
}

}  // namespace testing
}  // namespace devplace
