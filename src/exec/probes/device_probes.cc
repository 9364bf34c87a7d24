#include "exec/probes/device_probes.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>

#include "exec/host_cpus.h"

namespace devplace {
namespace {

using Clock = std::chrono::steady_clock;

// Runs `body` on a thread pinned to `cores`, set up as the executor's are.
template <typename Body>
double OnPinnedThread(const std::vector<int32_t>& cores, Body body) {
  double result = 0;
  std::thread thread([&] {
    PinThisThread(cores);
    at::set_num_threads(1);
    at::globalContext().setFlushDenormal(true);
    result = body();
  });
  thread.join();
  return result;
}

// The fastest of `repeats` runs of `f`, in microseconds.
template <typename F>
double BestUs(int32_t repeats, F f) {
  double best = std::numeric_limits<double>::infinity();
  for (int32_t r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  return best;
}

}  // namespace

double MeasureMatmulFlopsPerS(const std::vector<int32_t>& cores) {
  return OnPinnedThread(cores, [] {
    constexpr int64_t n = 256;
    const at::Tensor a = at::full({n, n}, 0.5), b = at::full({n, n}, 0.25);
    at::Tensor c = at::empty({n, n});
    const double us = BestUs(20, [&] { at::mm_out(c, a, b); });
    return 2.0 * n * n * n / (us * 1e-6);
  });
}

double MeasureKernelCallUs(const std::vector<int32_t>& cores) {
  return OnPinnedThread(cores, [] {
    const at::Tensor a = at::ones({1}), b = at::ones({1});
    at::Tensor c = at::empty({1});
    return BestUs(200, [&] { at::add_out(c, a, b); });
  });
}

int32_t CudaDeviceCount() {
  return torch::cuda::is_available() ? static_cast<int32_t>(torch::cuda::device_count()) : 0;
}

int64_t CudaMemoryBytes(int32_t index) {
  // Through the runtime library, loaded here, so that the build needs no
  // CUDA headers and a CPU-only machine no CUDA at all.
  void* runtime = nullptr;
  for (const char* name : {"libcudart.so", "libcudart.so.12", "libcudart.so.11.0"}) {
    if ((runtime = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  }
  if (runtime == nullptr) return 0;
  using SetDevice = int (*)(int);
  using MemGetInfo = int (*)(size_t*, size_t*);
  auto set_device = reinterpret_cast<SetDevice>(dlsym(runtime, "cudaSetDevice"));
  auto mem_get_info = reinterpret_cast<MemGetInfo>(dlsym(runtime, "cudaMemGetInfo"));
  size_t free_bytes = 0, total_bytes = 0;
  if (set_device == nullptr || mem_get_info == nullptr || set_device(index) != 0 ||
      mem_get_info(&free_bytes, &total_bytes) != 0) {
    total_bytes = 0;
  }
  dlclose(runtime);
  return static_cast<int64_t>(total_bytes);
}

double MeasureCudaMatmulFlopsPerS(int32_t index) {
  constexpr int64_t n = 4096;
  const auto options = at::TensorOptions().device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index)));
  const at::Tensor a = at::full({n, n}, 0.5, options), b = at::full({n, n}, 0.25, options);
  at::Tensor c = at::empty({n, n}, options);
  const double us = BestUs(5, [&] {
    at::mm_out(c, a, b);
    torch::cuda::synchronize(index);
  });
  return 2.0 * n * n * n / (us * 1e-6);
}

std::vector<CopySample> MeasureCudaCopies(int32_t from, int32_t to, const std::vector<int32_t>& host_cores,
                                          const std::vector<int64_t>& sizes_bytes, int32_t repeats) {
  auto device = [](int32_t index) {
    return index < 0 ? at::Device(at::kCPU) : at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index));
  };
  std::vector<CopySample> samples;
  for (int64_t bytes : sizes_bytes) {
    const double us = OnPinnedThread(host_cores, [&] {
      const at::Tensor source = at::ones({bytes}, at::TensorOptions().dtype(at::kByte).device(device(from)));
      return BestUs(repeats, [&] {
        at::Tensor copy = at::empty({bytes}, source.options().device(device(to)));
        copy.copy_(source);
        if (from >= 0) torch::cuda::synchronize(from);
        if (to >= 0) torch::cuda::synchronize(to);
      });
    });
    samples.push_back({bytes, us});
  }
  return samples;
}

}  // namespace devplace
