// The executor's CUDA path. This project's machine has no GPU and Debian's
// libtorch is CPU-only, so every test here skips, saying so; where torch
// sees a GPU they check that `clusters --detect` adds it, that a step runs
// on it and across it and the host, with the host's numbers, and that a
// GPU too small is reported out of memory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "exec/executor.h"
#include "exec/probes/detect_cluster.h"
#include "exec/probes/device_probes.h"
#include "exec_fixtures.h"

namespace devplace {
namespace {

using testing::HostCluster;
using testing::MatmulChain;

#define REQUIRE_GPU()                                                                                    \
  if (CudaDeviceCount() == 0)                                                                            \
  GTEST_SKIP() << "no CUDA device torch can see (a CPU-only libtorch, or no GPU): the GPU path is not " \
                  "tested on this machine"

// One CPU device of this machine and CUDA device 0.
Cluster HostAndGpu(int64_t gpu_memory_bytes) {
  Cluster cluster = HostCluster(1);
  Device gpu;
  gpu.name = "gpu:0";
  gpu.kind = DeviceKind::kGpu;
  gpu.peak_flops_per_s = 1e13;
  gpu.memory_bandwidth_bytes_per_s = 5e11;
  gpu.memory_bytes = gpu_memory_bytes;
  gpu.cuda_index = 0;
  cluster.devices.push_back(gpu);
  cluster.links.push_back({0, 1, 1e10, 10, -1});
  cluster.Finalize("test cluster with a GPU");
  return cluster;
}

std::vector<float> Floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

TEST(GpuTest, DetectAddsADevicePerGpu) {
  REQUIRE_GPU();
  DetectOptions options;
  options.copy_repeats = 2;
  const Cluster cluster = DetectCluster(options);
  int32_t gpus = 0;
  for (const Device& d : cluster.devices) {
    if (d.kind != DeviceKind::kGpu) continue;
    EXPECT_EQ(d.cuda_index, gpus) << d.name;
    EXPECT_GT(d.peak_flops_per_s, 0) << d.name;
    EXPECT_GT(d.memory_bytes, 0) << d.name;
    ++gpus;
  }
  EXPECT_EQ(gpus, CudaDeviceCount());
}

TEST(GpuTest, AStepOnAndAcrossTheGpuGivesTheHostsNumbers) {
  REQUIRE_GPU();
  const Cluster cluster = HostAndGpu(int64_t{1} << 30);
  const Graph graph = MatmulChain(4, 128);
  ExecOptions options;
  options.seed = 3;
  options.keep_outputs_of = {graph.num_ops() - 1};
  auto last_output = [&](const Placement& placement) {
    Executor executor(graph, cluster, options);
    const ExecStep step = executor.RunStep(placement);
    EXPECT_TRUE(step.result.ok()) << step.result.reason;
    return Floats(step.kept.at(0));
  };
  const std::vector<float> host = last_output(Placement(graph.num_ops(), 0));
  const std::vector<float> gpu = last_output(Placement(graph.num_ops(), 1));
  Placement split(graph.num_ops(), 0);
  for (int32_t op = graph.num_ops() / 2; op < graph.num_ops(); ++op) split[op] = 1;
  const std::vector<float> across = last_output(split);
  ASSERT_EQ(host.size(), gpu.size());
  ASSERT_EQ(host.size(), across.size());
  // GPU matmuls sum in another order (and may use TF32): float tolerance.
  for (size_t i = 0; i < host.size(); ++i) {
    const float tolerance = 1e-2f * std::max(1.0f, std::fabs(host[i]));
    ASSERT_NEAR(gpu[i], host[i], tolerance) << "element " << i;
    ASSERT_NEAR(across[i], host[i], tolerance) << "element " << i;
  }
}

TEST(GpuTest, AGpuTooSmallIsOutOfMemory) {
  REQUIRE_GPU();
  const Cluster cluster = HostAndGpu(int64_t{1} << 20);  // 1 MiB: the chain's tensors are 256 KiB each
  const Graph graph = MatmulChain(6, 256);
  Executor executor(graph, cluster);
  const ExecStep step = executor.RunStep(Placement(graph.num_ops(), 1));
  EXPECT_TRUE(step.result.oom);
  EXPECT_NE(step.result.reason.find("out of memory on gpu:0"), std::string::npos) << step.result.reason;
}

}  // namespace
}  // namespace devplace
