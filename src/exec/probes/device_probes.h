// Short measurements of this machine's devices through torch, for
// `clusters --detect`: how fast one thread multiplies matrices, what a
// kernel call costs, and the CUDA GPUs torch sees with their copy speeds.
// The header does not include torch.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/probes/copy_probe.h"

namespace devplace {

// FLOP/s of a 256 x 256 float matmul on one thread pinned to `cores`, with
// torch's intra-op threads at 1 (as the executor runs kernels): the best
// of a few.
double MeasureMatmulFlopsPerS(const std::vector<int32_t>& cores);

// Microseconds of the cheapest kernel call (a one-element add), the best
// of many: what every op pays however small.
double MeasureKernelCallUs(const std::vector<int32_t>& cores);

// CUDA devices torch sees (0 without CUDA).
int32_t CudaDeviceCount();

// Total memory of CUDA device `index` in bytes, read through the CUDA
// runtime (loaded at run time); 0 if it cannot be read.
int64_t CudaMemoryBytes(int32_t index);

// FLOP/s of a 4096 x 4096 float matmul on CUDA device `index`.
double MeasureCudaMatmulFlopsPerS(int32_t index);

// Copies of each size from `from` to `to` (-1: host memory written by a
// thread on `host_cores`; otherwise a CUDA index), fastest of `repeats`.
std::vector<CopySample> MeasureCudaCopies(int32_t from, int32_t to, const std::vector<int32_t>& host_cores,
                                          const std::vector<int64_t>& sizes_bytes, int32_t repeats);

}  // namespace devplace
