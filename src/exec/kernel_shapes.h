// Shape helpers the kernel files share: finding a kernel's operands among
// an op's inputs by their shapes, and broadcasting. Torch stays in exec/.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "exec/kernel.h"

namespace devplace::kernels {

using Shape = std::vector<int64_t>;

inline Shape OutShape(const KernelCall& c, int32_t i) { return TorchShapeOf(c.op.outputs[i]); }
inline bool Is(const at::Tensor& t, const Shape& shape) { return t.sizes().vec() == shape; }
inline int64_t Numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The inputs of a floating-point dtype, in order.
std::vector<at::Tensor> FloatInputs(const KernelCall& c);

// NumPy broadcasting of two shapes, or nullopt when they do not broadcast.
std::optional<Shape> Broadcast(at::IntArrayRef a, at::IntArrayRef b);

// The shape torch's matmul gives for a @ b (both of rank >= 2), or nullopt.
std::optional<Shape> MatmulShape(at::IntArrayRef a, at::IntArrayRef b);

// A state tensor of `shape` kept by the op (index `i`, made on first use
// with seeded values): a slot an op reads without a data edge for it.
// Returned by value (a handle to the same memory), so that taking another
// index, which may grow the state, leaves it valid.
at::Tensor StateTensor(KernelCall& c, size_t i, const Shape& shape);

}  // namespace devplace::kernels
