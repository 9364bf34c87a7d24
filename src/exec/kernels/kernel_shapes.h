// Shape helpers the kernel files share: finding a kernel's operands among
// an op's inputs by their shapes, and broadcasting. Torch stays in exec/.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "exec/kernels/kernel.h"

namespace devplace::kernels {

using Shape = std::vector<int64_t>;

inline Shape OutShape(const KernelCall& c, int32_t i) { return TorchShapeOf(c.op.outputs[i]); }
inline bool Is(const at::Tensor& t, const Shape& shape) { return t.sizes().vec() == shape; }
// Shapes come from the graph, whose loader refused counts that pass int64.
inline int64_t Numel(const Shape& shape) { return TensorSpec::CheckedBytes(shape, 1).value_or(0); }

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

// How one spatial dimension of a convolution or pooling maps `in` to `out`
// under a window `k`: stride, dilation, torch's symmetric padding, and
// `extra` rows TensorFlow pads at the end only (SAME with an odd total),
// padded explicitly. The graph records none of them: InferAxis works them
// out from the sizes (SAME, VALID, or a VALID dilation), or gives nullopt.
struct Axis {
  int64_t stride = 1, dilation = 1, pad = 0, extra = 0;
};
int64_t TorchOut(int64_t in, int64_t k, const Axis& a);
std::optional<Axis> InferAxis(int64_t in, int64_t k, int64_t out);

// An NCHW tensor with the `extra` rows and columns padded at the end.
at::Tensor PadEnd(const at::Tensor& nchw, const Axis& h, const Axis& w, double value = 0);

// A square pooling window from the FLOPs (pooling is costed at outputs *
// kh * kw), and each dimension's stride and padding; ceil mode where
// TensorFlow's odd SAME padding would need an extra row. Shapes NHWC.
struct PoolGeometry {
  int64_t k = 0;
  Axis h, w;
  bool ceil = false;
};
std::optional<PoolGeometry> InferPool(double flops, const Shape& in_nhwc, const Shape& out_nhwc);

// A batch normalization's saved statistics of x [N, C, ...]: the mean and
// inverse standard deviation per channel, as its backward reads them.
std::pair<at::Tensor, at::Tensor> BatchStatistics(const at::Tensor& x, double epsilon);

}  // namespace devplace::kernels
