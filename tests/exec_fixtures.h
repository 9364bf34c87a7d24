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

// A two-layer perceptron's training step with real TensorFlow op types:
// forward, softmax cross-entropy, backward and Adam updates.
struct Mlp {
  Graph graph;
  int32_t x, w1, mm1, relu, w2, logits, labels, xent, grad_w2, grad_relu, grad_mm1, grad_w1, adam1, adam2;
};

inline Mlp MakeMlp(int64_t batch = 16, int64_t in = 32, int64_t hidden = 32, int64_t classes = 8) {
  Mlp m;
  Graph& g = m.graph;
  g.name = "mlp";
  auto f32 = [](std::vector<int64_t> s) { return TensorSpec::Make(std::move(s)); };
  auto variable = [&](const std::string& name, std::vector<int64_t> shape) {
    const int32_t v = AddOp(g, name, "VariableV2", Phase::kForward, 0, {f32(shape)}, {});
    g.mutable_op(v).outputs[0].aliases_persistent = true;
    g.mutable_op(v).persistent_bytes = 3 * g.op(v).outputs[0].bytes;
    return v;
  };
  const Phase F = Phase::kForward, B = Phase::kBackward, U = Phase::kUpdate;
  m.x = AddOp(g, "x", "IteratorGetNext", F, 0, {f32({batch, in})}, {});
  m.labels = AddOp(g, "labels", "IteratorGetNext", F, 0, {TensorSpec::Make({batch}, "int32")}, {});
  m.w1 = variable("w1", {in, hidden});
  m.w2 = variable("w2", {hidden, classes});
  m.mm1 = AddOp(g, "mm1", "MatMul", F, 2.0 * batch * in * hidden, {f32({batch, hidden})}, {m.x, m.w1});
  m.relu = AddOp(g, "relu", "Relu", F, batch * hidden, {f32({batch, hidden})}, {m.mm1});
  m.logits = AddOp(g, "logits", "MatMul", F, 2.0 * batch * hidden * classes, {f32({batch, classes})}, {m.relu, m.w2});
  m.xent = AddOp(g, "xent", "SparseSoftmaxCrossEntropyWithLogits", F, 6.0 * batch * classes,
                 {f32({batch}), f32({batch, classes})}, {m.logits, m.labels});
  // The backward products read the cross-entropy's second output, the
  // gradient of the logits.
  auto backprop = [&](const std::string& name, std::vector<int64_t> shape, int32_t other, bool other_first,
                      double flops) {
    const int32_t op = AddOp(g, name, "MatMul", B, flops, {f32(shape)}, {});
    if (other_first) g.AddDataEdge(other, 0, op);
    g.AddDataEdge(m.xent, 1, op);
    if (!other_first) g.AddDataEdge(other, 0, op);
    return op;
  };
  m.grad_w2 = backprop("grad_w2", {hidden, classes}, m.relu, true, 2.0 * batch * hidden * classes);
  m.grad_relu = backprop("grad_relu", {batch, hidden}, m.w2, false, 2.0 * batch * hidden * classes);
  m.grad_mm1 = AddOp(g, "grad_mm1", "ReluGrad", B, batch * hidden, {f32({batch, hidden})}, {m.grad_relu, m.relu});
  m.grad_w1 = AddOp(g, "grad_w1", "MatMul", B, 2.0 * batch * in * hidden, {f32({in, hidden})}, {m.x, m.grad_mm1});
  m.adam1 = AddOp(g, "adam1", "ApplyAdam", U, 11.0 * in * hidden, {}, {m.grad_w1});
  m.adam2 = AddOp(g, "adam2", "ApplyAdam", U, 11.0 * hidden * classes, {}, {m.grad_w2});
  g.Finalize("mlp");
  return m;
}

}  // namespace testing
}  // namespace devplace
