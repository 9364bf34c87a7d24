#include "exec/probes/detect_cluster.h"

#include <unistd.h>

#include <string>

#include "cost/cost_model.h"
#include "exec/host_allocator.h"
#include "exec/host_cpus.h"
#include "exec/probes/copy_probe.h"
#include "exec/probes/device_probes.h"
#include "exec/probes/wake_probe.h"
#include "util/error.h"

namespace devplace {
namespace {

// 4 KiB to 16 MiB: latency dominates the smallest, bandwidth the largest.
const std::vector<int64_t> kCopySizes{4 << 10, 64 << 10, 1 << 20, 16 << 20};

Link MeasuredLink(int32_t a, int32_t b, const LinkFit& there, const LinkFit& back) {
  Link link;
  link.a = a;
  link.b = b;
  link.latency_us = (there.latency_us + back.latency_us) / 2;
  link.bandwidth_bytes_per_s = (there.bandwidth_bytes_per_s + back.bandwidth_bytes_per_s) / 2;
  return link;
}

// Idle times from a short nap to a long sleep: the guest's idle polling
// (or the OS's) ends somewhere between.
const std::vector<double> kIdleTimesUs{10, 20, 50, 100, 200, 500, 1000, 2000};

// Device `i`'s wake-up, woken by a thread on another device's cores (as a
// producer's worker wakes its consumer's), or on its own other cores when
// it is the only CPU device; none on a one-core machine.
WakeUpFit MeasuredWakeUp(const std::vector<std::vector<int32_t>>& core_sets, size_t i, int32_t repeats) {
  std::vector<int32_t> sleeper = core_sets[i];
  std::vector<int32_t> waker;
  if (core_sets.size() > 1) {
    waker = core_sets[(i + 1) % core_sets.size()];
  } else if (sleeper.size() > 1) {
    waker.assign(sleeper.begin() + 1, sleeper.end());
    sleeper.resize(1);
  } else {
    return {};
  }
  return FitWakeUp(MeasureWakeUps(waker, sleeper, kIdleTimesUs, repeats));
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "host";
  return ForMessage(name, 64);
}

}  // namespace

Cluster DetectCluster(const DetectOptions& options) {
  KeepFreedHostMemory();  // the probes measure memory as the executor will use it
  const std::vector<std::vector<int32_t>> core_sets = SplitCores(UsableCores(), options.cpu_devices);
  const EfficiencyTable efficiency = EfficiencyTable::Default();
  const int64_t memory_bytes = PhysicalMemoryBytes();
  if (memory_bytes <= 0) throw Error("cannot read this machine's physical memory size");

  Cluster cluster;
  cluster.name = HostName();
  for (int32_t i = 0; i < options.cpu_devices; ++i) {
    const std::vector<int32_t>& cores = core_sets[i];
    Device d;
    d.name = "cpu:" + std::to_string(i);
    d.kind = DeviceKind::kCpu;
    d.cores = cores;
    d.parallel_ops = static_cast<int32_t>(cores.size());
    d.memory_bytes = memory_bytes / options.cpu_devices;
    // Peak and bandwidth such that the roofline with its default CPU
    // efficiencies gives what a thread of this device measured.
    d.peak_flops_per_s = MeasureMatmulFlopsPerS(cores) / efficiency.Compute(OpKind::kMatMul, DeviceKind::kCpu);
    d.memory_bandwidth_bytes_per_s =
        MeasureMemoryBandwidth(cores) / efficiency.memory[static_cast<int>(DeviceKind::kCpu)];
    d.launch_overhead_us = MeasureKernelCallUs(cores);
    const WakeUpFit wake = MeasuredWakeUp(core_sets, static_cast<size_t>(i), options.wake_repeats);
    d.wake_up_us = wake.wake_up_us;
    d.wake_up_after_idle_us = wake.wake_up_after_idle_us;
    cluster.devices.push_back(std::move(d));
  }
  for (int32_t i = 0; i < options.cpu_devices; ++i) {
    for (int32_t j = i + 1; j < options.cpu_devices; ++j) {
      const LinkFit there = FitLink(MeasureCopies(core_sets[i], core_sets[j], kCopySizes, options.copy_repeats));
      const LinkFit back = FitLink(MeasureCopies(core_sets[j], core_sets[i], kCopySizes, options.copy_repeats));
      cluster.links.push_back(MeasuredLink(i, j, there, back));
    }
  }

  const int32_t gpus = options.gpus ? CudaDeviceCount() : 0;
  for (int32_t g = 0; g < gpus; ++g) {
    Device d;
    d.name = "gpu:" + std::to_string(g);
    d.kind = DeviceKind::kGpu;
    d.cuda_index = g;
    d.memory_bytes = CudaMemoryBytes(g);
    if (d.memory_bytes <= 0) {
      throw Error("cannot read the memory of CUDA device " + std::to_string(g) +
                  " (the CUDA runtime library did not load); pass --no-gpus and add the GPU by hand");
    }
    d.peak_flops_per_s = MeasureCudaMatmulFlopsPerS(g) / efficiency.Compute(OpKind::kMatMul, DeviceKind::kGpu);
    // A device-to-device copy reads and writes each byte once.
    const LinkFit local = FitLink(MeasureCudaCopies(g, g, core_sets[0], kCopySizes, options.copy_repeats));
    d.memory_bandwidth_bytes_per_s =
        2 * local.bandwidth_bytes_per_s / efficiency.memory[static_cast<int>(DeviceKind::kGpu)];
    d.launch_overhead_us = local.latency_us;
    const int32_t index = static_cast<int32_t>(cluster.devices.size());
    cluster.devices.push_back(std::move(d));
    // To every CPU device, and to the GPUs before it.
    for (int32_t i = 0; i < options.cpu_devices; ++i) {
      const LinkFit up = FitLink(MeasureCudaCopies(-1, g, core_sets[i], kCopySizes, options.copy_repeats));
      const LinkFit down = FitLink(MeasureCudaCopies(g, -1, core_sets[i], kCopySizes, options.copy_repeats));
      cluster.links.push_back(MeasuredLink(i, index, up, down));
    }
    for (int32_t h = 0; h < g; ++h) {
      const LinkFit there = FitLink(MeasureCudaCopies(h, g, core_sets[0], kCopySizes, options.copy_repeats));
      const LinkFit back = FitLink(MeasureCudaCopies(g, h, core_sets[0], kCopySizes, options.copy_repeats));
      cluster.links.push_back(MeasuredLink(options.cpu_devices + h, index, there, back));
    }
  }
  cluster.Finalize("detected cluster");
  return cluster;
}

}  // namespace devplace
