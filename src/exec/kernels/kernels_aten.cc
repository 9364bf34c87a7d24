// Kernels for PyTorch's aten ops (tools/export_pytorch.py) that TensorFlow's
// and ONNX's kernels do not cover. The exporter keeps an op's tensor
// arguments, in order, each tensor once, and none of its other arguments
// (strides, bounds, scalars): like every kernel, these work them out from
// the shapes, and the FLOPs where the exporter puts a window there.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ExpandUtils.h>

#include <array>

#include "exec/kernels/kernel_families.h"
#include "exec/kernels/kernel_shapes.h"

namespace devplace::kernels {
namespace {

constexpr double kAtenBatchNormEpsilon = 1e-5;  // torch's default
// torchvision's only hardtanh is ReLU6; the exporter drops its bounds.
constexpr double kHardtanhMin = 0, kHardtanhMax = 6;

Shape Nhwc(const Shape& nchw) { return {nchw[0], nchw[2], nchw[3], nchw[1]}; }

// An NCHW pooling's geometry from `flops` per output element: the
// exporter writes outputs * window (older exports wrote outputs, which
// reads as a 1 x 1 window with the stride the sizes give: the same shapes).
std::optional<PoolGeometry> AtenPool(double flops, const Shape& in, const Shape& out) {
  if (in.size() != 4 || out.size() != 4) return std::nullopt;
  return InferPool(flops, Nhwc(in), Nhwc(out));
}

struct PoolArgs {
  std::vector<int64_t> k, s, p;
  bool ceil;
};
PoolArgs Args(const PoolGeometry& g) { return {{g.k, g.k}, {g.h.stride, g.w.stride}, {g.h.pad, g.w.pad}, g.ceil}; }

// The output gradients aten's backward ops are asked for have the shapes
// of their operands; one not asked for has shape [] (an undefined tensor).
bool Wanted(const KernelCall& c, int32_t i) {
  return i < static_cast<int32_t>(c.outputs.size()) && !OutShape(c, i).empty();
}

void ZeroUnwanted(KernelCall& c) {
  for (int32_t i = 0; i < static_cast<int32_t>(c.outputs.size()); ++i) {
    if (!Wanted(c, i)) c.Out(i).zero_();
  }
}

}  // namespace

// (dy, x, w) -> (dx, dw, db): the geometry as the forward's.
bool AtenConvolutionBackward(KernelCall& c) {
  if (c.inputs.size() != 3 || c.outputs.size() != 3) return false;
  const at::Tensor& dy = c.inputs[0];
  const at::Tensor& x = c.inputs[1];
  const at::Tensor& f = c.inputs[2];
  if (dy.dim() != 4 || x.dim() != 4 || f.dim() != 4 || f.size(1) < 1 || x.size(1) % f.size(1) != 0 ||
      f.size(0) != dy.size(1) || x.size(0) != dy.size(0)) {
    return false;
  }
  if ((Wanted(c, 0) && !Is(x, OutShape(c, 0))) || (Wanted(c, 1) && !Is(f, OutShape(c, 1))) ||
      (Wanted(c, 2) && OutShape(c, 2) != Shape{f.size(0)})) {
    return false;
  }
  auto h = InferAxis(x.size(2), f.size(2), dy.size(2));
  auto w = InferAxis(x.size(3), f.size(3), dy.size(3));
  if (!h || !w) return false;
  const std::array<bool, 3> mask{Wanted(c, 0), Wanted(c, 1), Wanted(c, 2)};
  auto [dx, df, db] = at::convolution_backward(dy, PadEnd(x, *h, *w), f, std::vector<int64_t>{f.size(0)},
                                               {h->stride, w->stride}, {h->pad, w->pad}, {h->dilation, w->dilation},
                                               false, {0, 0}, x.size(1) / f.size(1), mask);
  if (mask[0] && (h->extra || w->extra)) dx = dx.narrow(2, 0, x.size(2)).narrow(3, 0, x.size(3));
  if (mask[0]) c.outputs[0] = dx;
  if (mask[1]) c.outputs[1] = df;
  if (mask[2]) c.outputs[2] = db;
  ZeroUnwanted(c);
  return true;
}

// (x, w, b, running mean, running var) -> (y, saved mean, saved inverse
// std), in training mode.
bool AtenBatchNorm(KernelCall& c) {
  if (c.inputs.size() < 3 || c.outputs.empty() || c.inputs[0].dim() < 2) return false;
  const at::Tensor& x = c.inputs[0];
  const Shape channels{x.size(1)};
  if (!Is(c.inputs[1], channels) || !Is(c.inputs[2], channels) || OutShape(c, 0) != x.sizes().vec()) return false;
  auto [y, mean, invstd] = at::native_batch_norm(x, c.inputs[1], c.inputs[2], {}, {}, true, 0.1, kAtenBatchNormEpsilon);
  c.outputs[0] = y;
  const std::array<at::Tensor, 2> saved{mean, invstd};
  for (int32_t i = 1; i < static_cast<int32_t>(c.outputs.size()) && i < 3; ++i) {
    if (OutShape(c, i) == channels) {
      c.outputs[i] = saved[i - 1];
    } else {
      c.Out(i).zero_();
    }
  }
  return true;
}

// (dy, x, w, running mean, running var, saved mean, saved inverse std) ->
// (dx, dw, db). The saved statistics are the last two inputs when all
// seven are there; otherwise they are computed again.
bool AtenBatchNormBackward(KernelCall& c) {
  if (c.inputs.size() < 3 || c.outputs.size() != 3 || c.inputs[1].dim() < 2) return false;
  const at::Tensor& dy = c.inputs[0];
  const at::Tensor& x = c.inputs[1];
  const at::Tensor& w = c.inputs[2];
  const Shape channels{x.size(1)};
  if (!Is(dy, x.sizes().vec()) || !Is(w, channels) || (Wanted(c, 0) && OutShape(c, 0) != x.sizes().vec())) return false;
  at::Tensor mean, invstd;
  if (c.inputs.size() == 7 && Is(c.inputs[5], channels) && Is(c.inputs[6], channels)) {
    mean = c.inputs[5];
    invstd = c.inputs[6];
  } else {
    std::tie(mean, invstd) = BatchStatistics(x, kAtenBatchNormEpsilon);
  }
  const std::array<bool, 3> mask{Wanted(c, 0), Wanted(c, 1), Wanted(c, 2)};
  auto [dx, dw, db] = at::native_batch_norm_backward(dy, x, w, {}, {}, mean, invstd, true, kAtenBatchNormEpsilon, mask);
  if (mask[0]) c.outputs[0] = dx;
  if (mask[1]) c.outputs[1] = dw;
  if (mask[2]) c.outputs[2] = db;
  ZeroUnwanted(c);
  return true;
}

bool AtenHardtanh(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.size() != 1 || !Is(c.inputs[0], OutShape(c, 0))) return false;
  at::clamp_out(c.Out(0), c.inputs[0], kHardtanhMin, kHardtanhMax);
  return true;
}

// (dy, x) -> dx.
bool AtenHardtanhBackward(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.size() != 2 || !Is(c.inputs[0], OutShape(c, 0)) ||
      !Is(c.inputs[1], OutShape(c, 0))) {
    return false;
  }
  c.outputs[0] = at::hardtanh_backward(c.inputs[0], c.inputs[1], kHardtanhMin, kHardtanhMax);
  return true;
}

// x -> (y, indices).
bool AtenMaxPoolWithIndices(KernelCall& c) {
  if (c.inputs.size() != 1 || c.outputs.size() != 2) return false;
  const at::Tensor& x = c.inputs[0];
  auto g = AtenPool(c.op.flops, x.sizes().vec(), OutShape(c, 0));
  if (!g || OutShape(c, 1) != OutShape(c, 0)) return false;
  const PoolArgs a = Args(*g);
  auto [y, indices] = at::max_pool2d_with_indices(x, a.k, a.s, a.p, {1, 1}, a.ceil);
  c.outputs[0] = y;
  c.Out(1).copy_(indices);
  return true;
}

// (dy, x, indices) -> dx: dy added at the maxima the indices name (flat
// positions in each channel's plane, folded into range: they may come
// from a stand-in).
bool AtenMaxPoolBackward(KernelCall& c) {
  if (c.inputs.size() != 3 || c.outputs.size() != 1) return false;
  const at::Tensor& dy = c.inputs[0];
  const at::Tensor& x = c.inputs[1];
  const at::Tensor& indices = c.inputs[2];
  if (dy.dim() != 4 || x.dim() != 4 || !Is(x, OutShape(c, 0)) || !Is(indices, dy.sizes().vec()) ||
      at::isFloatingType(indices.scalar_type()) || dy.size(0) != x.size(0) || dy.size(1) != x.size(1)) {
    return false;
  }
  const int64_t n = x.size(0), channels = x.size(1), plane = x.size(2) * x.size(3);
  at::Tensor& dx = c.Out(0);
  dx.zero_();
  const at::Tensor flat = indices.reshape({n, channels, -1}).to(at::kLong).remainder(plane);
  dx.view({n, channels, plane}).scatter_add_(2, flat, dy.reshape({n, channels, -1}));
  return true;
}

bool AtenAvgPool(KernelCall& c) {
  if (c.inputs.size() != 1 || c.outputs.size() != 1) return false;
  const at::Tensor& x = c.inputs[0];
  auto g = AtenPool(c.op.flops, x.sizes().vec(), OutShape(c, 0));
  if (!g) return false;
  const PoolArgs a = Args(*g);
  c.outputs[0] = at::avg_pool2d(x, a.k, a.s, a.p, a.ceil, /*count_include_pad=*/true);
  return true;
}

// (dy, x) -> dx; the FLOPs are dy's elements times the window.
bool AtenAvgPoolBackward(KernelCall& c) {
  if (c.inputs.size() != 2 || c.outputs.size() != 1) return false;
  const at::Tensor& dy = c.inputs[0];
  const at::Tensor& x = c.inputs[1];
  if (!Is(x, OutShape(c, 0))) return false;
  auto g = AtenPool(c.op.flops, x.sizes().vec(), dy.sizes().vec());
  if (!g) return false;
  const PoolArgs a = Args(*g);
  c.outputs[0] = at::avg_pool2d_backward(dy, x, a.k, a.s, a.p, a.ceil, true, c10::nullopt);
  return true;
}

// x -> the output's spatial size (VGG's 7 x 7 classifier input).
bool AtenAdaptiveAvgPool(KernelCall& c) {
  if (c.inputs.size() != 1 || c.outputs.size() != 1 || c.inputs[0].dim() != 4) return false;
  const Shape out = OutShape(c, 0);
  const at::Tensor& x = c.inputs[0];
  if (out.size() != 4 || out[0] != x.size(0) || out[1] != x.size(1)) return false;
  c.outputs[0] = at::adaptive_avg_pool2d(x, {out[2], out[3]});
  return true;
}

// (dy, x) -> dx.
bool AtenAdaptiveAvgPoolBackward(KernelCall& c) {
  if (c.inputs.size() != 2 || c.outputs.size() != 1) return false;
  const at::Tensor& dy = c.inputs[0];
  const at::Tensor& x = c.inputs[1];
  if (dy.dim() != 4 || x.dim() != 4 || !Is(x, OutShape(c, 0)) || dy.size(0) != x.size(0) || dy.size(1) != x.size(1)) {
    return false;
  }
  c.outputs[0] = at::_adaptive_avg_pool2d_backward(dy, x);
  return true;
}

namespace {

// (dy, y) -> dx of a (log-)softmax over the last axis (the axis is not in
// the graph; the models' is the last): both operands of the output's
// shape, at least one axis.
bool LastAxisSoftmaxGrad(KernelCall& c, void (*f)(at::Tensor& dx, const at::Tensor& dy, const at::Tensor& y)) {
  if (c.inputs.size() != 2 || c.outputs.size() != 1) return false;
  const at::Tensor& dy = c.inputs[0];
  const at::Tensor& y = c.inputs[1];
  if (dy.dim() == 0 || !Is(dy, OutShape(c, 0)) || !Is(y, OutShape(c, 0))) return false;
  f(c.Out(0), dy, y);
  return true;
}

}  // namespace

bool AtenLogSoftmaxBackward(KernelCall& c) {
  return LastAxisSoftmaxGrad(c, [](at::Tensor& dx, const at::Tensor& dy, const at::Tensor& y) {
    at::mul_out(dx, y.exp(), dy.sum(-1, true));
    at::sub_out(dx, dy, dx);
  });
}

// dx = y * (dy - sum(dy * y)): attention's softmax.
bool AtenSoftmaxBackward(KernelCall& c) {
  return LastAxisSoftmaxGrad(c, [](at::Tensor& dx, const at::Tensor& dy, const at::Tensor& y) {
    at::sub_out(dx, dy, (dy * y).sum(-1, true));
    dx.mul_(y);
  });
}

// (self, src) -> self with src's values: make_fx's copy of a transposed
// weight into a fresh buffer (a Linear on 3-D input: ViT, ConvNeXt).
bool AtenCopy(KernelCall& c) {
  if (c.inputs.size() != 2 || c.outputs.size() != 1) return false;
  const Shape out = OutShape(c, 0);
  const at::Tensor& src = c.inputs[1];
  if (!Is(c.inputs[0], out) || src.numel() != Numel(out)) return false;
  c.Out(0).copy_(src.reshape(out));
  return true;
}

// (log p [N, C], target [N]) -> (loss, total weight): the mean negative
// log-likelihood of the targets (folded into the classes).
bool AtenNllLoss(KernelCall& c) {
  if (c.inputs.size() != 2 || c.outputs.empty() || c.outputs.size() > 2) return false;
  const at::Tensor& logp = c.inputs[0];
  const at::Tensor& target = c.inputs[1];
  if (logp.dim() != 2 || target.numel() != logp.size(0) || at::isFloatingType(target.scalar_type()) ||
      Numel(OutShape(c, 0)) != 1) {
    return false;
  }
  const at::Tensor index = target.reshape({-1, 1}).to(at::kLong).remainder(logp.size(1));
  c.Out(0).copy_(logp.gather(1, index).mean().neg().reshape(c.Out(0).sizes()));
  if (c.outputs.size() == 2) c.Out(1).fill_(static_cast<double>(logp.size(0)));
  return true;
}

// (dloss, log p, target [, total weight]) -> dlog p: -dloss / N at each
// row's target.
bool AtenNllLossBackward(KernelCall& c) {
  if (c.inputs.size() < 3 || c.outputs.size() != 1) return false;
  const at::Tensor& dloss = c.inputs[0];
  const at::Tensor& logp = c.inputs[1];
  const at::Tensor& target = c.inputs[2];
  if (dloss.numel() != 1 || logp.dim() != 2 || !Is(logp, OutShape(c, 0)) || target.numel() != logp.size(0) ||
      at::isFloatingType(target.scalar_type())) {
    return false;
  }
  const at::Tensor index = target.reshape({-1, 1}).to(at::kLong).remainder(logp.size(1));
  at::Tensor& dx = c.Out(0);
  dx.zero_();
  const at::Tensor value = dloss.reshape({1, 1}).div(-static_cast<double>(logp.size(0))).expand({logp.size(0), 1});
  dx.scatter_(1, index, value);
  return true;
}

// (self, t1 [, t2]) -> self + t1 * t2 (t2 = t1 when the exporter kept one
// tensor for both: Adam's squared gradient).
bool AtenAddcmul(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.size() < 2 || c.inputs.size() > 3) return false;
  const at::Tensor& t2 = c.inputs.back();
  if (!Is(c.inputs[0], OutShape(c, 0)) || !at::is_expandable_to(c.inputs[1].sizes(), c.inputs[0].sizes()) ||
      !at::is_expandable_to(t2.sizes(), c.inputs[0].sizes())) {
    return false;
  }
  at::addcmul_out(c.Out(0), c.inputs[0], c.inputs[1], t2);
  return true;
}

// (self, t1, t2) -> self + t1 / t2, scaled as Adam's step by a learning rate
// the exporter does not keep.
bool AtenAddcdiv(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.size() != 3 || !Is(c.inputs[0], OutShape(c, 0)) ||
      !at::is_expandable_to(c.inputs[1].sizes(), c.inputs[0].sizes()) ||
      !at::is_expandable_to(c.inputs[2].sizes(), c.inputs[0].sizes())) {
    return false;
  }
  at::addcdiv_out(c.Out(0), c.inputs[0], c.inputs[1], c.inputs[2], -1e-3);
  return true;
}

// x -> a mask of ones with probability 1/2, seeded by the op's name (so
// every placement draws the same): dropout's.
bool AtenBernoulli(KernelCall& c) {
  if (c.outputs.size() != 1 || !c.device.is_cpu() || !at::isFloatingType(ScalarTypeOf(c.op.outputs[0].dtype))) {
    return false;
  }
  uint64_t h = c.seed;
  for (unsigned char ch : c.op.name) h = (h ^ ch) * 0x100000001b3ull;
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(h);
  c.Out(0).bernoulli_(0.5, generator);
  return true;
}

namespace {

// (dy, y) -> dx, aten's order (TensorFlow's SigmoidGrad and TanhGrad take
// y first).
bool OutputGradOf(KernelCall& c, void (*f)(at::Tensor&, const at::Tensor&, const at::Tensor&)) {
  if (c.outputs.size() != 1 || c.inputs.size() != 2 || !Is(c.inputs[0], OutShape(c, 0)) ||
      !Is(c.inputs[1], OutShape(c, 0))) {
    return false;
  }
  f(c.Out(0), c.inputs[0], c.inputs[1]);
  return true;
}

}  // namespace

bool AtenSigmoidBackward(KernelCall& c) {
  return OutputGradOf(c, [](at::Tensor& o, const at::Tensor& dy, const at::Tensor& y) {
    at::sigmoid_backward_out(o, dy, y);
  });
}
// (dy, x) -> dx: these read the forward's input, not its output; the
// same operand shapes.
bool AtenGeluBackward(KernelCall& c) {
  return OutputGradOf(c, [](at::Tensor& o, const at::Tensor& dy, const at::Tensor& x) {
    at::gelu_backward_out(o, dy, x);
  });
}
bool AtenHardswishBackward(KernelCall& c) {
  return OutputGradOf(c, [](at::Tensor& o, const at::Tensor& dy, const at::Tensor& x) {
    at::hardswish_backward_out(o, dy, x);
  });
}
bool AtenHardsigmoidBackward(KernelCall& c) {
  return OutputGradOf(c, [](at::Tensor& o, const at::Tensor& dy, const at::Tensor& x) {
    at::hardsigmoid_backward_out(o, dy, x);
  });
}
bool AtenTanhBackward(KernelCall& c) {
  return OutputGradOf(c, [](at::Tensor& o, const at::Tensor& dy, const at::Tensor& y) {
    at::tanh_backward_out(o, dy, y);
  });
}

// aten.t and aten.expand are views: no data moves.
bool AtenTransposeView(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.size() != 1 || c.inputs[0].dim() > 2) return false;
  const at::Tensor t = c.inputs[0].dim() == 2 ? c.inputs[0].t() : c.inputs[0];
  if (!Is(t, OutShape(c, 0))) return false;
  c.outputs[0] = t;
  return true;
}

bool AtenExpandView(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.size() != 1) return false;
  const Shape out = OutShape(c, 0);
  if (!at::is_expandable_to(c.inputs[0].sizes(), out)) return false;
  c.outputs[0] = c.inputs[0].expand(out);
  return true;
}

}  // namespace devplace::kernels
