// The real executor (src/exec): steps run on this machine's CPU devices
// with libtorch kernels. Graphs here are tiny so that the suite stays fast;
// no assertion depends on how fast this machine is, only on relations that
// hold on a loaded one (a run is at least its kernels' time, a copy moves
// the tensor's bytes, results do not depend on the placement).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "cluster/cluster_json.h"
#include "exec/executor.h"
#include "exec/host_cpus.h"
#include "exec/probes/detect_cluster.h"
#include "exec_fixtures.h"
#include "graph/graph_json.h"
#include "models/registry.h"
#include "run_devplace.h"
#include "test_files.h"
#include "util/error.h"

namespace devplace {
namespace {

using testing::RunDevplace;
using testing::AddOp;
using testing::HostCluster;
using testing::MakeMlp;
using testing::MatmulChain;
using testing::Mlp;
using testing::TempDir;

TEST(ExecutorTest, OneDeviceTakesAboutTheSumOfItsKernels) {
  const Cluster cluster = HostCluster(1);
  REQUIRE_CLUSTER(cluster, 1);
  const Graph graph = MatmulChain(8, 256);
  Executor executor(graph, cluster);
  const ExecMeasurement m = MeasureRealStepTime(executor, Placement(graph.num_ops(), 0), 3);
  ASSERT_TRUE(m.protocol.ok) << m.last.result.reason;
  const ExecStep& step = m.last;
  EXPECT_TRUE(step.stand_ins.empty());
  const double kernels_us = std::accumulate(step.op_time_us.begin(), step.op_time_us.end(), 0.0);
  ASSERT_GT(kernels_us, 0);
  // One worker runs the ops one after another: the step is at least their
  // sum. What it adds is the executor's own work between ops (a lock, a
  // queue, a wake-up): the stated bound is twice the sum plus 20 ms, loose
  // enough for a loaded 2-core machine (the other builds' time slices land
  // in kernels as much as between them), tight enough to catch an executor
  // that serialises badly or sleeps.
  EXPECT_GE(step.result.step_time_us, kernels_us * 0.999);
  EXPECT_LE(step.result.step_time_us, 2 * kernels_us + 20'000) << "kernels " << kernels_us << " us";
  EXPECT_EQ(step.result.devices[0].num_ops, graph.num_ops());
  EXPECT_NEAR(step.result.devices[0].compute_total_us(), kernels_us, 1e-6 * kernels_us);
}

// The protocol drops the first step; a fresh executor's second step still
// grows the heap, so a fresh executor runs one step more and drops it too.
TEST(ExecutorTest, AFreshExecutorDropsTwoWarmUpSteps) {
  const Cluster cluster = HostCluster(1);
  REQUIRE_CLUSTER(cluster, 1);
  const Graph graph = MatmulChain(2, 32);
  const Placement placement(graph.num_ops(), 0);
  Executor executor(graph, cluster);
  EXPECT_EQ(executor.steps_run(), 0);
  const ExecMeasurement fresh = MeasureRealStepTime(executor, placement, 3);
  ASSERT_TRUE(fresh.protocol.ok) << fresh.last.result.reason;
  EXPECT_EQ(executor.steps_run(), 4);
  EXPECT_EQ(fresh.protocol.steps_averaged, 2);
  const ExecMeasurement warm = MeasureRealStepTime(executor, placement, 3);
  EXPECT_EQ(executor.steps_run(), 7);
  EXPECT_EQ(warm.protocol.steps_averaged, 2);
  // One step alone is measured as it is, fresh or not.
  Executor single(graph, cluster);
  EXPECT_EQ(MeasureRealStepTime(single, placement, 1).protocol.steps_averaged, 1);
  EXPECT_EQ(single.steps_run(), 1);
}

TEST(ExecutorTest, ChainSplitAcrossTwoDevicesCopiesTheTensor) {
  const Cluster cluster = HostCluster(2);
  REQUIRE_CLUSTER(cluster, 2);
  const Graph graph = MatmulChain(2, 64);
  // x, w0, mm0 on cpu:0; w1, mm1 on cpu:1: mm0's output crosses.
  Placement placement(graph.num_ops(), 0);
  placement[graph.FindOp("w1")] = 1;
  placement[graph.FindOp("mm1")] = 1;
  ExecOptions options;
  options.record_events = true;
  Executor executor(graph, cluster, options);
  const ExecStep step = executor.RunStep(placement);
  ASSERT_TRUE(step.result.ok()) << step.result.reason;
  const int64_t bytes = graph.op(graph.FindOp("mm0")).outputs[0].bytes;
  ASSERT_EQ(step.result.transfer_events.size(), 1u);
  const TransferEvent& copy = step.result.transfer_events[0];
  EXPECT_EQ(copy.src_op, graph.FindOp("mm0"));
  EXPECT_EQ(copy.from_device, 0);
  EXPECT_EQ(copy.to_device, 1);
  EXPECT_EQ(copy.bytes, bytes);
  EXPECT_EQ(step.result.devices[0].bytes_out, bytes);
  EXPECT_EQ(step.result.devices[1].bytes_in, bytes);
  EXPECT_GT(step.result.devices[1].copy_in_us, 0);
  // The consumer starts after the copy has arrived.
  double mm1_start = -1;
  for (const OpEvent& e : step.result.op_events) {
    if (e.op == graph.FindOp("mm1")) mm1_start = e.start_us;
  }
  EXPECT_GE(mm1_start, copy.end_us);
  // Memory: the receiver held the copy (and its own weight and output).
  EXPECT_GE(step.result.devices[1].peak_memory_bytes, bytes);
}

// A copy into a CPU device is done by that device's worker between its ops
// (the simulator's host-core copy model), so it never overlaps an op
// there. cpu:1 runs a chain of matmuls while cpu:0 sends it a tensor after
// each of its own: a copy thread of its own would run beside cpu:1's ops.
TEST(ExecutorTest, CopiesIntoACpuDeviceRunBetweenItsOps) {
  const Cluster cluster = HostCluster(2);
  REQUIRE_CLUSTER(cluster, 2);
  Graph graph;
  graph.name = "two_chains";
  const int64_t n = 128;
  auto square = [&] { return std::vector<TensorSpec>{TensorSpec::Make({n, n})}; };
  const double flops = 2.0 * n * n * n;
  const int32_t x = AddOp(graph, "x", "IteratorGetNext", Phase::kForward, 0, square(), {});
  const int32_t y = AddOp(graph, "y", "IteratorGetNext", Phase::kForward, 0, square(), {});
  int32_t a = x;
  int32_t b = y;
  std::vector<int32_t> on_cpu1 = {y};
  for (int32_t i = 0; i < 12; ++i) {
    a = AddOp(graph, "a" + std::to_string(i), "MatMul", Phase::kForward, flops, square(), {a, a});
    // b_i reads cpu:1's previous result and a_i's, copied from cpu:0.
    b = AddOp(graph, "b" + std::to_string(i), "MatMul", Phase::kForward, flops, square(), {b, a});
    on_cpu1.push_back(b);
  }
  graph.Finalize("two_chains");
  Placement placement(graph.num_ops(), 0);
  for (int32_t op : on_cpu1) placement[op] = 1;
  ExecOptions options;
  options.record_events = true;
  Executor executor(graph, cluster, options);
  const ExecStep step = executor.RunStep(placement);
  ASSERT_TRUE(step.result.ok()) << step.result.reason;
  ASSERT_EQ(step.result.transfer_events.size(), 12u);
  for (const TransferEvent& copy : step.result.transfer_events) {
    for (const OpEvent& op : step.result.op_events) {
      if (op.device != copy.to_device) continue;
      EXPECT_TRUE(op.end_us <= copy.start_us || op.start_us >= copy.end_us)
          << "copy [" << copy.start_us << ", " << copy.end_us << "] overlaps " << graph.op(op.op).name << " ["
          << op.start_us << ", " << op.end_us << "]";
    }
  }
}

TEST(ExecutorTest, ResultsDoNotDependOnThePlacement) {
  const Cluster cluster = HostCluster(2);
  REQUIRE_CLUSTER(cluster, 2);
  const Mlp m = MakeMlp();
  const Graph& g = m.graph;
  ExecOptions options;
  options.seed = 7;
  options.keep_outputs_of = {m.xent, m.grad_w1, m.grad_w2, m.adam1, m.adam2};
  auto run = [&](const Placement& placement) {
    Executor executor(g, cluster, options);
    ExecStep step;
    for (int s = 0; s < 2; ++s) step = executor.RunStep(placement);  // state carried over a step
    EXPECT_TRUE(step.result.ok()) << step.result.reason;
    EXPECT_TRUE(step.stand_ins.empty()) << step.stand_ins.front().type << ": " << step.stand_ins.front().why;
    return step.kept;
  };
  const auto one = run(Placement(g.num_ops(), 0));
  const auto other = run(Placement(g.num_ops(), 1));
  Placement split(g.num_ops(), 0);
  for (int32_t op : {m.w2, m.logits, m.xent, m.grad_w2, m.grad_relu, m.adam2}) split[op] = 1;
  const auto across = run(split);
  ASSERT_EQ(one.size(), 5u);
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_FALSE(one[i].empty());
    EXPECT_EQ(one[i], other[i]) << "output " << i;
    EXPECT_EQ(one[i], across[i]) << "output " << i;
  }
  // The bytes compared are the computation's: another seed changes them.
  options.seed = 8;
  EXPECT_NE(run(Placement(g.num_ops(), 0))[0], one[0]);
}

TEST(ExecutorTest, OutOfMemoryIsReportedCleanly) {
  // 1 MiB per device; the chain's 256 x 256 floats are 256 KiB each.
  const Cluster cluster = HostCluster(1, int64_t{1} << 20);
  REQUIRE_CLUSTER(cluster, 1);
  const Graph graph = MatmulChain(6, 256);
  Executor executor(graph, cluster);
  const ExecStep step = executor.RunStep(Placement(graph.num_ops(), 0));
  EXPECT_TRUE(step.result.oom);
  EXPECT_FALSE(step.result.ok());
  EXPECT_TRUE(step.result.devices[0].oom);
  EXPECT_NE(step.result.reason.find("out of memory on cpu:0"), std::string::npos) << step.result.reason;
  EXPECT_GT(step.result.devices[0].peak_memory_bytes, cluster.devices[0].usable_memory_bytes());
  // The executor is still usable: a placement that fits runs.
  const Graph small = MatmulChain(1, 64);
  Executor again(small, cluster);
  EXPECT_TRUE(again.RunStep(Placement(small.num_ops(), 0)).result.ok());
}

TEST(ExecutorTest, InvalidPlacementIsRefusedWithAReason) {
  const Cluster cluster = HostCluster(1);
  REQUIRE_CLUSTER(cluster, 1);
  const Graph graph = MatmulChain(1, 8);
  Executor executor(graph, cluster);
  const ExecStep step = executor.RunStep(Placement(graph.num_ops() - 1, 0));
  EXPECT_TRUE(step.result.invalid);
  EXPECT_FALSE(step.result.reason.empty());
}

TEST(ExecutorTest, RefusesAClusterOfAnotherMachine) {
  Cluster cluster = HostCluster(1);
  REQUIRE_CLUSTER(cluster, 1);
  cluster.devices[0].cores.clear();
  EXPECT_THROW(CheckClusterIsThisMachine(cluster, "c.json"), Error);
  Cluster gpu = HostCluster(1);
  gpu.devices[0].kind = DeviceKind::kGpu;
  gpu.devices[0].cores.clear();
  gpu.devices[0].cuda_index = 7;
  try {
    CheckClusterIsThisMachine(gpu, "c.json");
    ADD_FAILURE() << "a GPU torch does not see was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA device 7"), std::string::npos) << e.what();
  }
}

// The kernels understand the built-in models' shapes: each model, made
// small, runs with a real kernel for every op (LSTMs, embeddings and sparse
// Adam, attention, convolutions with their gradients, depthwise and
// dilated ones, pooling, batch norm, RMSProp).
TEST(ExecutorTest, SmallBuiltInModelsRunRealKernelsOnly) {
  const Cluster cluster = HostCluster(1);
  REQUIRE_CLUSTER(cluster, 1);
  const std::vector<std::pair<std::string, ModelParams>> models = {
      {"rnnlm", {{"layers", 1}, {"hidden", 16}, {"steps", 3}, {"batch", 4}, {"vocab", 50}}},
      {"nmt", {{"layers", 1}, {"hidden", 16}, {"length", 3}, {"batch", 4}, {"vocab", 50}}},
      {"gnmt2", {{"layers", 2}, {"hidden", 16}, {"length", 3}, {"batch", 4}, {"vocab", 50}}},
      {"inception_v3", {{"batch", 1}, {"image", 107}, {"classes", 10}}},
      {"bert_base",
       {{"layers", 1},
        {"hidden", 32},
        {"heads", 2},
        {"intermediate", 64},
        {"length", 8},
        {"batch", 2},
        {"vocab", 100}}},
      {"transformer_xl2",
       {{"layers", 1}, {"d_model", 32}, {"heads", 2}, {"d_inner", 64}, {"length", 8}, {"memory", 8}, {"batch", 2}}},
      {"wavenet2x18", {{"stacks", 1}, {"layers", 4}, {"channels", 8}, {"skip", 16}, {"batch", 1}, {"samples", 256}}},
      {"amoebanet", {{"cells", 1}, {"filters", 8}, {"batch", 1}, {"image", 32}, {"classes", 10}}},
  };
  for (const auto& [name, params] : models) {
    const Graph graph = MakeModel(name, params);
    Executor executor(graph, cluster);
    const ExecStep step = executor.RunStep(Placement(graph.num_ops(), 0));
    ASSERT_TRUE(step.result.ok()) << name << ": " << step.result.reason;
    for (const StandInUse& s : step.stand_ins) ADD_FAILURE() << name << ": " << s.type << " ran a stand-in: " << s.why;
  }
}

// Types without a kernel run the stand-in, and the step says so.
TEST(ExecutorTest, StandInsAreReportedByType) {
  const Cluster cluster = HostCluster(1);
  REQUIRE_CLUSTER(cluster, 1);
  Graph g;
  g.name = "odd";
  const int32_t x = AddOp(g, "x", "IteratorGetNext", Phase::kForward, 0, {TensorSpec::Make({8, 8})}, {});
  AddOp(g, "odd", "NoSuchOp", Phase::kForward, 1e6, {TensorSpec::Make({8, 8}), TensorSpec::Make({3}, "int64")}, {x});
  g.Finalize("odd");
  Executor executor(g, cluster);
  const ExecStep step = executor.RunStep(Placement(g.num_ops(), 0));
  ASSERT_TRUE(step.result.ok()) << step.result.reason;
  ASSERT_EQ(step.stand_ins.size(), 1u);
  EXPECT_EQ(step.stand_ins[0].type, "NoSuchOp");
  EXPECT_EQ(step.stand_ins[0].ops, 1);
  EXPECT_EQ(step.stand_ins[0].why, "no kernel");
  EXPECT_GT(step.stand_in_share(), 0);
  EXPECT_LE(step.stand_in_share(), 1);
}

// clusters --detect's cluster goes through the file format and back, and
// every CPU device owns cores this process may use.
TEST(DetectClusterTest, DetectedClusterLoadsAsAValidCluster) {
  DetectOptions options;
  options.cpu_devices = std::min<int32_t>(2, static_cast<int32_t>(UsableCores().size()));
  options.gpus = false;
  options.copy_repeats = 2;
  const Cluster detected = DetectCluster(options);
  const Cluster loaded = ClusterFromJson(ClusterToJson(detected), "detected.json");
  ASSERT_EQ(loaded.num_devices(), options.cpu_devices);
  std::vector<int32_t> all;
  for (int32_t d = 0; d < loaded.num_devices(); ++d) {
    const Device& device = loaded.devices[d];
    EXPECT_EQ(device.cores, detected.devices[d].cores);
    EXPECT_FALSE(device.cores.empty());
    EXPECT_EQ(device.parallel_ops, static_cast<int32_t>(device.cores.size()));
    EXPECT_GT(device.peak_flops_per_s, 0);
    all.insert(all.end(), device.cores.begin(), device.cores.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a core owned twice";
  EXPECT_EQ(loaded.links.size(), static_cast<size_t>(options.cpu_devices * (options.cpu_devices - 1) / 2));
  for (const Link& link : loaded.links) {
    EXPECT_GT(link.bandwidth_bytes_per_s, 0);
    EXPECT_GE(link.latency_us, 0);
  }
  EXPECT_NO_THROW(CheckClusterIsThisMachine(loaded, "detected.json"));
}

// End to end: clusters --detect, then run with --json and --trace.
TEST(RunCommandTest, DetectThenRun) {
  TempDir dir;
  const std::string host = dir.File("host.json");
  auto detect = RunDevplace("clusters --detect --no-gpus -o " + host);
  ASSERT_EQ(detect.exit_code, 0) << detect.out;
  const Cluster cluster = LoadClusterFile(host);
  const std::string graph = dir.File("mlp.json");
  SaveGraphFile(MakeMlp().graph, graph);
  const std::string trace = dir.File("trace.json");
  auto run = RunDevplace("run --graph " + graph + " --cluster " + host +
                         " --placement single:cpu:0 --steps 3 --json --trace " + trace);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const nlohmann::json out = nlohmann::json::parse(run.out);
  EXPECT_TRUE(out["measured"].get<bool>());
  EXPECT_GT(out["step_time_s"].get<double>(), 0);
  EXPECT_EQ(out["steps_averaged"].get<int>(), 2);
  EXPECT_EQ(out["devices"].size(), static_cast<size_t>(cluster.num_devices()));
  EXPECT_TRUE(out["stand_ins"].empty()) << out["stand_ins"].dump();
  EXPECT_FALSE(out["oom"].get<bool>());
  const nlohmann::json events = nlohmann::json::parse(testing::ReadFile(trace));
  EXPECT_FALSE(events["traceEvents"].empty());

  auto text = RunDevplace("run --graph " + graph + " --cluster " + host + " --placement single:cpu:0 --steps 1");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("step time:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("stand-ins: none"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace devplace
