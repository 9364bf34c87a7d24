// Kernels for graphs imported from ONNX (devplace import): the forward ops
// TensorFlow's names do not cover or cover in another layout (ONNX is NCHW),
// and the gradient ops `import --training` generates, which read their
// operands in the importer's layout (kernel.h, ImportGradient), not
// TensorFlow's. Like every kernel, each declines shapes it cannot read.
#include <ATen/ExpandUtils.h>

#include <array>
#include <functional>
#include <limits>

#include "exec/kernels/kernel_families.h"
#include "exec/kernels/kernel_shapes.h"

namespace devplace::kernels {
namespace {

constexpr double kOnnxBatchNormEpsilon = 1e-5;  // ONNX's default

Shape Nhwc(const Shape& nchw) { return {nchw[0], nchw[2], nchw[3], nchw[1]}; }

// The pooling geometry of NCHW shapes (InferPool reads NHWC ones).
std::optional<PoolGeometry> InferPoolNchw(double flops, const Shape& in, const Shape& out) {
  if (in.size() != 4 || out.size() != 4) return std::nullopt;
  return InferPool(flops, Nhwc(in), Nhwc(out));
}

// A scalar input's value, or `fallback` when input `i` is not one.
double ScalarInput(const KernelCall& c, size_t i, double fallback) {
  if (i >= c.inputs.size() || c.inputs[i].numel() != 1) return fallback;
  return c.inputs[i].item<double>();
}

bool PoolNchw(KernelCall& c, bool max) {
  if (c.outputs.size() != 1 || c.inputs.empty() || c.inputs[0].dim() != 4) return false;
  const at::Tensor& x = c.inputs[0];
  auto g = InferPoolNchw(c.op.flops, x.sizes().vec(), OutShape(c, 0));
  if (!g) return false;
  const std::vector<int64_t> k{g->k, g->k}, s{g->h.stride, g->w.stride}, p{g->h.pad, g->w.pad};
  // ONNX's AveragePool leaves padding out of the count by default.
  c.outputs[0] = max ? at::max_pool2d(x, k, s, p, {1, 1}, g->ceil)
                     : at::avg_pool2d(x, k, s, p, g->ceil, /*count_include_pad=*/false);
  return true;
}

}  // namespace

std::pair<at::Tensor, at::Tensor> BatchStatistics(const at::Tensor& x, double epsilon) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  auto [var, mean] = at::var_mean(x, dims, /*unbiased=*/false, /*keepdim=*/false);
  return {mean, var.add_(epsilon).rsqrt_()};
}

// ---- forward ops

// "MaxPool" is TensorFlow's (NHWC) and ONNX's (NCHW): the dimension the
// pooling keeps, channels, says which. A pooling that keeps every
// dimension (stride 1, padded) fits both: TensorFlow's reading is taken,
// the same work.
bool MaxPoolEitherLayout(KernelCall& c) {
  if (MaxPool(c)) return true;
  return PoolNchw(c, true);
}

bool OnnxAveragePool(KernelCall& c) { return PoolNchw(c, false); }

// (x [N, C, ...], scale, B, mean, var) -> y [, running mean, running var].
// Normalised by the batch's statistics, as a training step does: the
// seeded running variance is no variance (it may be negative).
bool OnnxBatchNorm(KernelCall& c) {
  if (c.outputs.empty() || c.inputs.size() < 3 || c.inputs[0].dim() < 2) return false;
  const at::Tensor& x = c.inputs[0];
  const Shape channels{x.size(1)};
  if (!Is(c.inputs[1], channels) || !Is(c.inputs[2], channels) || OutShape(c, 0) != x.sizes().vec()) return false;
  for (size_t i = 1; i < c.outputs.size(); ++i) {
    if (OutShape(c, static_cast<int32_t>(i)) != channels) return false;
  }
  auto [y, mean, invstd] =
      at::native_batch_norm(x, c.inputs[1], c.inputs[2], {}, {}, true, 0.1, kOnnxBatchNormEpsilon);
  c.outputs[0] = y;
  if (c.outputs.size() > 1) c.outputs[1] = mean;
  if (c.outputs.size() > 2) c.outputs[2] = invstd;
  return true;
}

// (x, [min], [max]) -> x clamped; bounds that are not scalar inputs are open.
bool Clip(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.empty() || !Is(c.inputs[0], OutShape(c, 0))) return false;
  const double lo = ScalarInput(c, 1, -std::numeric_limits<double>::infinity());
  const double hi = ScalarInput(c, 2, std::numeric_limits<double>::infinity());
  at::clamp_out(c.Out(0), c.inputs[0], lo, hi);
  return true;
}

// A product plus the rank-1 inputs that broadcast to it: ONNX's Gemm
// (A, B, C) and aten's addmm (bias, A, B).
bool MatMulAddBias(KernelCall& c) {
  if (!MatMul(c)) return false;
  at::Tensor& out = c.Out(0);
  for (const at::Tensor& t : FloatInputs(c)) {
    if (t.dim() == 1 && out.dim() >= 1 && t.size(0) == out.size(-1)) {
      out.add_(t);
      break;
    }
  }
  return true;
}

// ---- ONNX import's gradient ops

namespace {

const ImportGradient* Layout(const KernelCall& c) {
  const ImportGradient* layout = c.import_gradient;
  if (layout == nullptr || layout->forward_inputs > static_cast<int32_t>(c.inputs.size()) ||
      layout->gradient_of.size() != c.outputs.size()) {
    return nullptr;
  }
  return layout;
}

int32_t ArrivingCount(const KernelCall& c) {
  return static_cast<int32_t>(c.inputs.size()) - c.import_gradient->forward_inputs;
}

// The gradient of the forward op's (one) output: the arriving gradients,
// one per consumer, summed.
std::optional<at::Tensor> OutputGradient(const KernelCall& c) {
  const ImportGradient* layout = Layout(c);
  if (layout == nullptr || ArrivingCount(c) < 1) return std::nullopt;
  at::Tensor dy = c.inputs[layout->forward_inputs];
  for (size_t i = layout->forward_inputs + 1; i < c.inputs.size(); ++i) {
    if (!Is(c.inputs[i], dy.sizes().vec())) return std::nullopt;
    dy = dy + c.inputs[i];
  }
  return dy;
}

// The forward input output k is the gradient of.
const at::Tensor& InputOf(const KernelCall& c, size_t k) { return c.inputs[c.import_gradient->gradient_of[k]]; }

// Sets output k to `value` in its own shape (torch's sum_to for an operand
// that was broadcast), or declines.
bool SetGradient(KernelCall& c, size_t k, const at::Tensor& value) {
  const Shape shape = OutShape(c, static_cast<int32_t>(k));
  at::Tensor v = value;
  if (v.sizes().vec() != shape) {
    if (!at::is_expandable_to(shape, v.sizes())) {
      if (v.numel() != Numel(shape)) return false;
      v = v.reshape(shape);
    } else {
      v = at::sum_to(v, shape);
    }
  }
  c.outputs[k] = v;
  return true;
}

using PointwiseGrad = std::function<at::Tensor(const at::Tensor& dy, const at::Tensor& x)>;

// An op of one float operand x (input 0) and scalar bounds or constants
// after it: dx = f(dy, x); gradients of the others are zero.
bool UnaryGrad(KernelCall& c, const PointwiseGrad& f) {
  auto dy = OutputGradient(c);
  if (!dy || c.import_gradient->forward_inputs < 1 || c.inputs[0].numel() != dy->numel()) return false;
  const at::Tensor x = c.inputs[0].reshape(dy->sizes());
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const bool of_x = c.import_gradient->gradient_of[k] == 0;
    if (!SetGradient(c, k, of_x ? f(*dy, x) : at::zeros(OutShape(c, static_cast<int32_t>(k)), x.options()))) {
      return false;
    }
  }
  return true;
}

// Which operand (0 or 1) of a two-operand op output k differentiates:
// Add(x, x) reads x once and has a gradient per operand.
int32_t OperandOf(const KernelCall& c, size_t k) {
  if (c.import_gradient->forward_inputs == 1) return c.outputs.size() == 2 ? static_cast<int32_t>(k) : 0;
  return c.import_gradient->gradient_of[k];
}

using BinaryPartial =
    std::function<at::Tensor(const at::Tensor& dy, const at::Tensor& a, const at::Tensor& b, int32_t operand)>;

bool BinaryGrad(KernelCall& c, const BinaryPartial& partial) {
  auto dy = OutputGradient(c);
  const int32_t operands = c.import_gradient->forward_inputs;
  if (!dy || operands < 1 || operands > 2) return false;
  const at::Tensor& a = c.inputs[0];
  const at::Tensor& b = operands == 2 ? c.inputs[1] : c.inputs[0];
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    if (!SetGradient(c, k, partial(*dy, a, b, OperandOf(c, k)))) return false;
  }
  return true;
}

// The forward op's geometry for NCHW convolutions, as OnnxConv finds it.
struct ConvGeometry {
  Axis h, w;
  int64_t groups = 1;
};

std::optional<ConvGeometry> InferConv(const at::Tensor& x, const at::Tensor& f, const at::Tensor& y) {
  if (x.dim() != 4 || f.dim() != 4 || y.dim() != 4 || f.size(1) < 1 || x.size(1) % f.size(1) != 0 ||
      f.size(0) != y.size(1) || x.size(0) != y.size(0)) {
    return std::nullopt;
  }
  auto h = InferAxis(x.size(2), f.size(2), y.size(2));
  auto w = InferAxis(x.size(3), f.size(3), y.size(3));
  if (!h || !w) return std::nullopt;
  return ConvGeometry{*h, *w, x.size(1) / f.size(1)};
}

// An NCHW max or average pooling's input gradient: x, dy -> dx. The op's
// FLOPs are the forward's plus an add per extra arriving gradient.
bool PoolGradNchw(KernelCall& c, bool max) {
  auto dy = OutputGradient(c);
  if (!dy || c.outputs.size() != 1 || c.import_gradient->gradient_of[0] != 0) return false;
  const at::Tensor& x = c.inputs[0];
  const double extra_adds = static_cast<double>(ArrivingCount(c) - 1) * static_cast<double>(dy->numel());
  const double forward_flops = c.op.flops - extra_adds;
  auto g = InferPoolNchw(forward_flops, x.sizes().vec(), dy->sizes().vec());
  if (!g || !Is(x, OutShape(c, 0))) return false;
  const std::vector<int64_t> k{g->k, g->k}, s{g->h.stride, g->w.stride}, p{g->h.pad, g->w.pad}, d{1, 1};
  if (max) {
    const at::Tensor indices = std::get<1>(at::max_pool2d_with_indices(x, k, s, p, d, g->ceil));
    c.outputs[0] = at::max_pool2d_with_indices_backward(*dy, x, k, s, p, d, g->ceil, indices);
  } else {
    c.outputs[0] = at::avg_pool2d_backward(*dy, x, k, s, p, g->ceil, false, c10::nullopt);
  }
  return true;
}

}  // namespace

bool ReluImportGrad(KernelCall& c) {
  return UnaryGrad(c, [](const at::Tensor& dy, const at::Tensor& x) { return at::threshold_backward(dy, x, 0); });
}
bool SigmoidImportGrad(KernelCall& c) {
  return UnaryGrad(c, [](const at::Tensor& dy, const at::Tensor& x) { return at::sigmoid_backward(dy, x.sigmoid()); });
}
bool TanhImportGrad(KernelCall& c) {
  return UnaryGrad(c, [](const at::Tensor& dy, const at::Tensor& x) { return at::tanh_backward(dy, x.tanh()); });
}
bool ClipImportGrad(KernelCall& c) {
  const double lo = ScalarInput(c, 1, -std::numeric_limits<double>::max());
  const double hi = ScalarInput(c, 2, std::numeric_limits<double>::max());
  return UnaryGrad(c, [lo, hi](const at::Tensor& dy, const at::Tensor& x) {
    return at::hardtanh_backward(dy, x, lo, hi);
  });
}
// Reshape, Flatten, Identity, Squeeze, Unsqueeze, Dropout: dy in x's shape.
bool ReshapeImportGrad(KernelCall& c) {
  return UnaryGrad(c, [](const at::Tensor& dy, const at::Tensor&) { return dy; });
}

// Pad and Slice, as their kernels place the input: at the start of each
// dimension (the graph keeps no offsets). Pad's gradient is dy's leading
// block; Slice's, dy in the leading block of zeros.
bool PadImportGrad(KernelCall& c) {
  auto dy = OutputGradient(c);
  if (!dy || c.import_gradient->forward_inputs < 1 || c.inputs[0].dim() != dy->dim()) return false;
  const at::Tensor& x = c.inputs[0];
  at::Tensor block = *dy;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (dy->size(d) < x.size(d)) return false;
    block = block.narrow(d, 0, x.size(d));
  }
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const bool of_x = c.import_gradient->gradient_of[k] == 0;
    if (!SetGradient(c, k, of_x ? block : at::zeros(OutShape(c, static_cast<int32_t>(k)), x.options()))) return false;
  }
  return true;
}

bool SliceImportGrad(KernelCall& c) {
  auto dy = OutputGradient(c);
  if (!dy || c.import_gradient->forward_inputs < 1 || c.outputs.size() != 1 ||
      c.import_gradient->gradient_of[0] != 0 || c.inputs[0].dim() != dy->dim()) {
    return false;
  }
  const at::Tensor& x = c.inputs[0];
  at::Tensor dx = at::zeros_like(x);
  at::Tensor block = dx;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (dy->size(d) > x.size(d)) return false;
    block = block.narrow(d, 0, dy->size(d));
  }
  block.copy_(*dy);
  return SetGradient(c, 0, dx);
}

// Softmax over the last dimension (opset 13's default axis): y recomputed
// from x, dx = y (dy - sum(dy y)).
bool SoftmaxImportGrad(KernelCall& c) {
  return UnaryGrad(c, [](const at::Tensor& dy, const at::Tensor& x) {
    const at::Tensor y = at::_softmax(x, -1, false);
    return y * (dy - (dy * y).sum(-1, true));
  });
}

bool LogSoftmaxImportGrad(KernelCall& c) {
  return UnaryGrad(c, [](const at::Tensor& dy, const at::Tensor& x) {
    return dy - at::_softmax(x, -1, false) * dy.sum(-1, true);
  });
}

// x, dy -> dy permuted back: the permutation is the first that takes x's
// shape to dy's, as the Transpose kernel picks it.
bool TransposeImportGrad(KernelCall& c) {
  auto dy = OutputGradient(c);
  if (!dy || c.import_gradient->forward_inputs < 1 || c.outputs.size() != 1 || c.inputs[0].dim() != dy->dim()) {
    return false;
  }
  const at::Tensor& x = c.inputs[0];
  const int64_t rank = x.dim();
  std::vector<int64_t> perm, inverse(rank);
  std::vector<bool> used(rank, false);
  const bool reverse = rank == 2;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t found = -1;
    for (int64_t k = 0; k < rank && found < 0; ++k) {
      const int64_t e = reverse ? rank - 1 - k : k;
      if (!used[e] && x.size(e) == dy->size(d)) found = e;
    }
    if (found < 0) return false;
    used[found] = true;
    perm.push_back(found);
  }
  for (int64_t d = 0; d < rank; ++d) inverse[perm[d]] = d;
  return SetGradient(c, 0, dy->permute(inverse));
}

bool GlobalAveragePoolImportGrad(KernelCall& c) {
  auto dy = OutputGradient(c);
  if (!dy || c.outputs.size() != 1 || c.inputs[0].dim() < 3 || dy->dim() != c.inputs[0].dim()) return false;
  const at::Tensor& x = c.inputs[0];
  if (!at::is_expandable_to(dy->sizes(), x.sizes())) return false;
  const double window = static_cast<double>(x.numel() / dy->numel());
  return SetGradient(c, 0, dy->div(window).expand(x.sizes()));
}

bool MaxPoolImportGrad(KernelCall& c) { return PoolGradNchw(c, true); }
bool AveragePoolImportGrad(KernelCall& c) { return PoolGradNchw(c, false); }

bool AddImportGrad(KernelCall& c) {
  return BinaryGrad(c, [](const at::Tensor& dy, const at::Tensor&, const at::Tensor&, int32_t) { return dy; });
}
bool SubImportGrad(KernelCall& c) {
  return BinaryGrad(c, [](const at::Tensor& dy, const at::Tensor&, const at::Tensor&, int32_t operand) {
    return operand == 0 ? dy : -dy;
  });
}
bool MulImportGrad(KernelCall& c) {
  return BinaryGrad(c, [](const at::Tensor& dy, const at::Tensor& a, const at::Tensor& b, int32_t operand) {
    return dy * (operand == 0 ? b : a);
  });
}
bool DivImportGrad(KernelCall& c) {
  return BinaryGrad(c, [](const at::Tensor& dy, const at::Tensor& a, const at::Tensor& b, int32_t operand) {
    return operand == 0 ? dy / b : -dy * a / (b * b);
  });
}

// (x, w [, b], dy) -> the gradients of those that need one.
bool ConvImportGrad(KernelCall& c) {
  auto dy = OutputGradient(c);
  if (!dy || c.import_gradient->forward_inputs < 2) return false;
  const at::Tensor& x = c.inputs[0];
  const at::Tensor& f = c.inputs[1];
  auto g = InferConv(x, f, *dy);
  if (!g) return false;
  std::array<bool, 3> wanted{false, false, false};
  for (int32_t of : c.import_gradient->gradient_of) {
    if (of > 2) return false;
    wanted[of] = true;
  }
  const std::vector<int64_t> bias_sizes{f.size(0)};
  auto [dx, df, db] = at::convolution_backward(*dy, PadEnd(x, g->h, g->w), f, bias_sizes, {g->h.stride, g->w.stride},
                                               {g->h.pad, g->w.pad}, {g->h.dilation, g->w.dilation}, false, {0, 0},
                                               g->groups, wanted);
  if (wanted[0] && (g->h.extra || g->w.extra)) dx = dx.narrow(2, 0, x.size(2)).narrow(3, 0, x.size(3));
  const std::array<at::Tensor, 3> grads{dx, df, db};
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    if (!SetGradient(c, k, grads[c.import_gradient->gradient_of[k]])) return false;
  }
  return true;
}

// (x, scale, B, mean, var, dy) -> dx, dscale, dB; zeros for the running
// statistics, which a training step's normalisation does not read.
bool BatchNormalizationImportGrad(KernelCall& c) {
  auto dy = OutputGradient(c);
  if (!dy || c.import_gradient->forward_inputs < 3 || c.inputs[0].dim() < 2) return false;
  const at::Tensor& x = c.inputs[0];
  const at::Tensor& scale = c.inputs[1];
  const Shape channels{x.size(1)};
  if (!Is(*dy, x.sizes().vec()) || !Is(scale, channels)) return false;
  auto [mean, invstd] = BatchStatistics(x, kOnnxBatchNormEpsilon);
  auto [dx, dscale, dbias] = at::native_batch_norm_backward(*dy, x, scale, {}, {}, mean, invstd, true,
                                                            kOnnxBatchNormEpsilon, {true, true, true});
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const int32_t of = c.import_gradient->gradient_of[k];
    const at::Tensor grad = of == 0 ? dx : of == 1 ? dscale : of == 2 ? dbias : at::zeros(channels, x.options());
    if (!SetGradient(c, k, grad)) return false;
  }
  return true;
}

// (A, B [, C], dy): the transposes that give dy's shape, as MatMul finds
// them; dA and dB are products with dy, dC dy summed to C's shape.
bool GemmImportGrad(KernelCall& c) {
  auto dy = OutputGradient(c);
  if (!dy || c.import_gradient->forward_inputs < 2 || c.inputs[0].dim() < 2 || c.inputs[1].dim() < 2) return false;
  const at::Tensor& a = c.inputs[0];
  const at::Tensor& b = c.inputs[1];
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      const at::Tensor opa = ta ? a.transpose(-1, -2) : a;
      const at::Tensor opb = tb ? b.transpose(-1, -2) : b;
      auto shape = MatmulShape(opa.sizes(), opb.sizes());
      if (!shape || *shape != dy->sizes().vec()) continue;
      for (size_t k = 0; k < c.outputs.size(); ++k) {
        const int32_t of = c.import_gradient->gradient_of[k];
        at::Tensor grad;
        if (of == 0) {
          grad = at::matmul(*dy, opb.transpose(-1, -2));
          if (ta) grad = grad.transpose(-1, -2);
        } else if (of == 1) {
          grad = at::matmul(opa.transpose(-1, -2), *dy);
          if (tb) grad = grad.transpose(-1, -2);
        } else {
          grad = *dy;
        }
        if (!SetGradient(c, k, grad)) return false;
      }
      return true;
    }
  }
  return false;
}

// (x_1 .. x_n, dy): each input's slice of dy along the axis they were
// concatenated on.
bool ConcatImportGrad(KernelCall& c) {
  auto dy = OutputGradient(c);
  const int32_t n = c.import_gradient != nullptr ? c.import_gradient->forward_inputs : 0;
  if (!dy || n < 1) return false;
  for (int64_t axis = 0; axis < dy->dim(); ++axis) {
    int64_t total = 0;
    bool fits = true;
    for (int32_t i = 0; i < n && fits; ++i) {
      const at::Tensor& x = c.inputs[i];
      fits = x.dim() == dy->dim();
      for (int64_t d = 0; d < dy->dim() && fits; ++d) fits = d == axis || x.size(d) == dy->size(d);
      if (fits) total += x.size(axis);
    }
    if (!fits || total != dy->size(axis)) continue;
    std::vector<int64_t> offsets(n, 0);
    for (int32_t i = 1; i < n; ++i) offsets[i] = offsets[i - 1] + c.inputs[i - 1].size(axis);
    for (size_t k = 0; k < c.outputs.size(); ++k) {
      const int32_t of = c.import_gradient->gradient_of[k];
      if (!SetGradient(c, k, dy->narrow(axis, offsets[of], c.inputs[of].size(axis)))) return false;
    }
    return true;
  }
  return false;
}

// The importer's Loss is the mean log-sum-exp of each input's rows, summed
// (ScalarLoss): its gradient is each input's row softmax over the rows.
bool LossImportGrad(KernelCall& c) {
  if (Layout(c) == nullptr || c.import_gradient->forward_inputs < 1) return false;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const at::Tensor& x = InputOf(c, k);
    if (x.numel() == 0) return false;
    const int64_t last = x.dim() == 0 ? 1 : x.size(-1);
    const at::Tensor rows = x.reshape({-1, last});
    if (!SetGradient(c, k, at::_softmax(rows, 1, false).div_(static_cast<double>(rows.size(0))).reshape(x.sizes())))
      return false;
  }
  return true;
}

}  // namespace devplace::kernels
