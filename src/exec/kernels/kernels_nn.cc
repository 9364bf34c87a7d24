// Convolutions, pooling and batch normalization. TensorFlow's tensors are
// NHWC; torch's kernels take NCHW, and an NHWC tensor permuted to NCHW is
// one in torch's channels-last layout, so no data moves to get there. The
// graph records neither strides nor padding: each spatial dimension's are
// worked out from the input, window and output sizes (InferAxis).
#include <cmath>
#include <functional>

#include "exec/kernels/kernel_families.h"
#include "exec/kernels/kernel_shapes.h"

namespace devplace::kernels {

int64_t TorchOut(int64_t in, int64_t k, const Axis& a) {
  return (in + a.extra + 2 * a.pad - a.dilation * (k - 1) - 1) / a.stride + 1;
}

std::optional<Axis> InferAxis(int64_t in, int64_t k, int64_t out) {
  if (in < 1 || k < 1 || out < 1) return std::nullopt;
  for (int64_t s = 1; s <= std::min<int64_t>(in, 16); ++s) {
    if ((in + s - 1) / s == out) {  // SAME
      const int64_t total = std::max<int64_t>((out - 1) * s + k - in, 0);
      Axis a{s, 1, total / 2, total % 2};
      if (a.pad <= k / 2 && TorchOut(in, k, a) == out) return a;
    }
    if (in >= k && (in - k) / s + 1 == out) return Axis{s, 1, 0, 0};  // VALID
  }
  // VALID with a dilation (WaveNet), stride 1.
  if (k > 1 && in > out && (in - out) % (k - 1) == 0) return Axis{1, (in - out) / (k - 1), 0, 0};
  return std::nullopt;
}

at::Tensor PadEnd(const at::Tensor& nchw, const Axis& h, const Axis& w, double value) {
  if (h.extra == 0 && w.extra == 0) return nchw;
  return at::constant_pad_nd(nchw, {0, w.extra, 0, h.extra}, value);
}

namespace {

at::Tensor Nchw(const at::Tensor& nhwc) { return nhwc.permute({0, 3, 1, 2}); }
at::Tensor Nhwc(const at::Tensor& nchw) { return nchw.permute({0, 2, 3, 1}).contiguous(); }


// The first two rank-4 float inputs a, b (in input order) for which
// `fits(a, b)` holds.
bool FindPair(const KernelCall& c, const std::function<bool(const at::Tensor&, const at::Tensor&)>& fits, at::Tensor* a,
              at::Tensor* b) {
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    for (size_t j = 0; j < c.inputs.size(); ++j) {
      const at::Tensor& x = c.inputs[i];
      const at::Tensor& y = c.inputs[j];
      if (i == j || x.dim() != 4 || y.dim() != 4 || !at::isFloatingType(x.scalar_type()) ||
          !at::isFloatingType(y.scalar_type()) || !fits(x, y)) {
        continue;
      }
      *a = x;
      *b = y;
      return true;
    }
  }
  return false;
}

// A TensorFlow filter as torch's weight: [kh, kw, Ci, Co] -> [Co, Ci, kh, kw];
// depthwise [kh, kw, Ci, M] -> [Ci * M, 1, kh, kw] (groups of one channel).
at::Tensor TorchWeight(const at::Tensor& f, bool depthwise) {
  return depthwise ? f.reshape({f.size(0), f.size(1), -1}).permute({2, 0, 1}).unsqueeze(1) : f.permute({3, 2, 0, 1});
}

// x [N, H, W, Ci] * filter [kh, kw, Ci, Co] -> [N, Ho, Wo, Co]; depthwise
// filters are [kh, kw, Ci, M] -> [N, Ho, Wo, Ci * M].
bool ConvNhwc(KernelCall& c, bool depthwise) {
  if (c.outputs.size() != 1) return false;
  const Shape out = OutShape(c, 0);
  if (out.size() != 4) return false;
  at::Tensor x, f;
  auto fits = [&](const at::Tensor& a, const at::Tensor& b) {
    const int64_t co = depthwise ? b.size(2) * b.size(3) : b.size(3);
    return a.size(3) == b.size(2) && a.size(0) == out[0] && co == out[3];
  };
  if (!FindPair(c, fits, &x, &f)) return false;
  const int64_t kh = f.size(0), kw = f.size(1), ci = f.size(2);
  auto h = InferAxis(x.size(1), kh, out[1]);
  auto w = InferAxis(x.size(2), kw, out[2]);
  if (!h || !w) return false;
  const at::Tensor weight = TorchWeight(f, depthwise).contiguous();
  const at::Tensor y = at::convolution(PadEnd(Nchw(x), *h, *w), weight, {}, {h->stride, w->stride}, {h->pad, w->pad},
                                       {h->dilation, w->dilation}, false, {0, 0}, depthwise ? ci : 1);
  c.outputs[0] = Nhwc(y);
  return true;
}

}  // namespace

bool Conv2D(KernelCall& c) { return ConvNhwc(c, false); }
bool DepthwiseConv2D(KernelCall& c) { return ConvNhwc(c, true); }

namespace {

// (input sizes, filter [kh, kw, Ci, Co], dy [N, Ho, Wo, Co]) -> dx [N, H, W, Ci]:
// a transposed convolution, as TensorFlow computes it.
bool ConvBackpropInput(KernelCall& c, bool depthwise) {
  if (c.outputs.size() != 1) return false;
  const Shape out = OutShape(c, 0);
  if (out.size() != 4) return false;
  at::Tensor f, dy;
  auto fits = [&](const at::Tensor& a, const at::Tensor& b) {
    const int64_t co = depthwise ? a.size(2) * a.size(3) : a.size(3);
    return b.size(3) == co && a.size(2) == out[3] && b.size(0) == out[0];
  };
  if (!FindPair(c, fits, &f, &dy)) return false;
  const int64_t kh = f.size(0), kw = f.size(1);
  auto h = InferAxis(out[1], kh, dy.size(1));
  auto w = InferAxis(out[2], kw, dy.size(2));
  if (!h || !w) return false;
  // Torch's transposed output is (Ho - 1) s - 2 p + d (k - 1) + 1 + output_padding.
  auto output_padding = [](int64_t in, int64_t k, int64_t o, const Axis& a) {
    return in + a.extra - ((o - 1) * a.stride - 2 * a.pad + a.dilation * (k - 1) + 1);
  };
  const int64_t oh = output_padding(out[1], kh, dy.size(1), *h), ow = output_padding(out[2], kw, dy.size(2), *w);
  if (oh < 0 || ow < 0 || oh >= std::max(h->stride, h->dilation) || ow >= std::max(w->stride, w->dilation))
    return false;
  at::Tensor dx = at::conv_transpose2d(Nchw(dy), TorchWeight(f, depthwise).contiguous(), {}, {h->stride, w->stride},
                                       {h->pad, w->pad}, {oh, ow}, depthwise ? out[3] : 1, {h->dilation, w->dilation});
  if (h->extra || w->extra) dx = dx.narrow(2, 0, out[1]).narrow(3, 0, out[2]);
  c.outputs[0] = Nhwc(dx);
  return true;
}

// (x [N, H, W, Ci], filter sizes, dy [N, Ho, Wo, Co]) -> [kh, kw, Ci, Co]
// (depthwise: [kh, kw, Ci, M] with Co = Ci * M).
bool ConvBackpropFilter(KernelCall& c, bool depthwise) {
  if (c.outputs.size() != 1) return false;
  const Shape out = OutShape(c, 0);
  if (out.size() != 4) return false;
  const int64_t co = depthwise ? out[2] * out[3] : out[3];
  at::Tensor x, dy;
  auto fits = [&](const at::Tensor& a, const at::Tensor& b) {
    return a.size(3) == out[2] && b.size(3) == co && a.size(0) == b.size(0);
  };
  if (!FindPair(c, fits, &x, &dy)) return false;
  auto h = InferAxis(x.size(1), out[0], dy.size(1));
  auto w = InferAxis(x.size(2), out[1], dy.size(2));
  if (!h || !w) return false;
  at::Tensor& df = c.Out(0);
  // The weight is read only for its sizes when only its gradient is asked.
  const at::Tensor weight = TorchWeight(df, depthwise);
  auto grads = at::convolution_backward(Nchw(dy), PadEnd(Nchw(x), *h, *w), weight, c10::nullopt, {h->stride, w->stride},
                                        {h->pad, w->pad}, {h->dilation, w->dilation}, false, {0, 0},
                                        depthwise ? out[2] : 1, {false, true, false});
  const at::Tensor& grad = std::get<1>(grads);
  if (depthwise) {
    df.view({out[0], out[1], co}).copy_(grad.squeeze(1).permute({1, 2, 0}));
  } else {
    df.copy_(grad.permute({2, 3, 1, 0}));
  }
  return true;
}

}  // namespace

bool Conv2DBackpropInput(KernelCall& c) { return ConvBackpropInput(c, false); }
bool Conv2DBackpropFilter(KernelCall& c) { return ConvBackpropFilter(c, false); }
bool DepthwiseConv2DBackpropInput(KernelCall& c) { return ConvBackpropInput(c, true); }
bool DepthwiseConv2DBackpropFilter(KernelCall& c) { return ConvBackpropFilter(c, true); }

// ONNX's Conv: x [N, Ci, H, W], w [Co, Ci / groups, kh, kw], an optional bias.
bool OnnxConv(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.size() < 2) return false;
  const Shape out = OutShape(c, 0);
  const at::Tensor& x = c.inputs[0];
  const at::Tensor& f = c.inputs[1];
  if (out.size() != 4 || x.dim() != 4 || f.dim() != 4 || f.size(1) < 1 || x.size(1) % f.size(1) != 0 ||
      f.size(0) != out[1] || x.size(0) != out[0]) {
    return false;
  }
  auto h = InferAxis(x.size(2), f.size(2), out[2]);
  auto w = InferAxis(x.size(3), f.size(3), out[3]);
  if (!h || !w) return false;
  const at::Tensor bias =
      c.inputs.size() >= 3 && c.inputs[2].dim() == 1 && c.inputs[2].size(0) == out[1] ? c.inputs[2] : at::Tensor();
  c.outputs[0] = at::convolution(PadEnd(x, *h, *w), f, bias, {h->stride, w->stride}, {h->pad, w->pad},
                                 {h->dilation, w->dilation}, false, {0, 0}, x.size(1) / f.size(1))
                     .contiguous();
  return true;
}

std::optional<PoolGeometry> InferPool(double flops, const Shape& in, const Shape& out) {
  if (in.size() != 4 || out.size() != 4 || in[0] != out[0] || in[3] != out[3]) return std::nullopt;
  const double per_output = flops / static_cast<double>(std::max<int64_t>(Numel(out), 1));
  const int64_t k = std::llround(std::sqrt(per_output));
  if (k < 1 || std::abs(static_cast<double>(k * k) - per_output) > 0.01 * per_output) return std::nullopt;
  auto h = InferAxis(in[1], k, out[1]);
  auto w = InferAxis(in[2], k, out[2]);
  if (!h || !w || h->dilation != 1 || w->dilation != 1) return std::nullopt;
  PoolGeometry g{k, *h, *w, false};
  if (h->extra || w->extra) {
    // Ceil mode gives the extra output without a padded copy.
    auto ceil_out = [&](int64_t n, const Axis& a) {
      int64_t o = (n + 2 * a.pad - k + a.stride - 1) / a.stride + 1;
      if ((o - 1) * a.stride >= n + a.pad) --o;
      return o;
    };
    g.h.extra = g.w.extra = 0;
    g.ceil = true;
    if (ceil_out(in[1], g.h) != out[1] || ceil_out(in[2], g.w) != out[2]) return std::nullopt;
  }
  return g;
}


bool MaxPool(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.empty()) return false;
  const at::Tensor& x = c.inputs[0];
  auto g = InferPool(c.op.flops, x.sizes().vec(), OutShape(c, 0));
  if (!g) return false;
  c.outputs[0] =
      Nhwc(at::max_pool2d(Nchw(x), {g->k, g->k}, {g->h.stride, g->w.stride}, {g->h.pad, g->w.pad}, {1, 1}, g->ceil));
  return true;
}

bool AvgPool(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.empty()) return false;
  const at::Tensor& x = c.inputs[0];
  auto g = InferPool(c.op.flops, x.sizes().vec(), OutShape(c, 0));
  if (!g) return false;
  // TensorFlow's SAME average leaves the padding out of the count.
  c.outputs[0] = Nhwc(at::avg_pool2d(Nchw(x), {g->k, g->k}, {g->h.stride, g->w.stride}, {g->h.pad, g->w.pad}, g->ceil,
                                     /*count_include_pad=*/false));
  return true;
}

// (x, y, dy) -> dx. TensorFlow's CPU kernel finds the maxima again; so does
// this, and routes dy through them.
bool MaxPoolGrad(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.size() != 3) return false;
  const at::Tensor& x = c.inputs[0];
  const at::Tensor& dy = c.inputs[2];
  if (!Is(x, OutShape(c, 0))) return false;
  auto g = InferPool(c.op.flops, x.sizes().vec(), dy.sizes().vec());
  if (!g) return false;
  const std::vector<int64_t> k{g->k, g->k}, s{g->h.stride, g->w.stride}, p{g->h.pad, g->w.pad}, d{1, 1};
  const at::Tensor indices = std::get<1>(at::max_pool2d_with_indices(Nchw(x), k, s, p, d, g->ceil));
  c.outputs[0] = Nhwc(at::max_pool2d_with_indices_backward(Nchw(dy), Nchw(x), k, s, p, d, g->ceil, indices));
  return true;
}

// (input sizes, dy) -> dx.
bool AvgPoolGrad(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.empty()) return false;
  const Shape out = OutShape(c, 0);
  const at::Tensor& dy = c.inputs.back();
  if (dy.dim() != 4) return false;
  auto g = InferPool(c.op.flops, out, dy.sizes().vec());
  if (!g) return false;
  at::Tensor& dx = c.Out(0);
  // The input is read only for its sizes.
  const at::Tensor grad = at::avg_pool2d_backward(Nchw(dy), Nchw(dx), {g->k, g->k}, {g->h.stride, g->w.stride},
                                                  {g->h.pad, g->w.pad}, g->ceil, false, c10::nullopt);
  dx.copy_(grad.permute({0, 2, 3, 1}));
  return true;
}

namespace {
constexpr double kBatchNormEpsilon = 1e-3;  // TensorFlow's default
}  // namespace

// (x [N, H, W, C], scale, offset) -> (y, batch mean, batch variance, saved
// mean, saved inverse standard deviation), in training mode.
bool FusedBatchNorm(KernelCall& c) {
  if (c.outputs.size() != 5 || c.inputs.size() < 3 || c.inputs[0].dim() != 4) return false;
  const at::Tensor& x = c.inputs[0];
  const Shape channels{x.size(3)};
  if (!Is(c.inputs[1], channels) || !Is(c.inputs[2], channels) || OutShape(c, 0) != x.sizes().vec()) return false;
  for (int i = 1; i < 5; ++i) {
    if (OutShape(c, i) != channels) return false;
  }
  auto [y, mean, invstd] =
      at::native_batch_norm(Nchw(x), c.inputs[1], c.inputs[2], {}, {}, true, 0.1, kBatchNormEpsilon);
  c.outputs[0] = Nhwc(y);
  c.Out(1).copy_(mean);
  at::pow_out(c.Out(2), invstd, -2);
  c.outputs[3] = mean;
  c.outputs[4] = invstd;
  return true;
}

// (dy, x, scale, saved mean, saved inverse std) -> (dx, dscale, doffset).
bool FusedBatchNormGrad(KernelCall& c) {
  if (c.outputs.size() != 3 || c.inputs.size() != 5 || c.inputs[1].dim() != 4) return false;
  const at::Tensor& dy = c.inputs[0];
  const at::Tensor& x = c.inputs[1];
  const Shape channels{x.size(3)};
  if (!Is(dy, x.sizes().vec()) || OutShape(c, 0) != x.sizes().vec() || OutShape(c, 1) != channels ||
      OutShape(c, 2) != channels) {
    return false;
  }
  for (int i = 2; i < 5; ++i) {
    if (!Is(c.inputs[i], channels)) return false;
  }
  auto [dx, dscale, doffset] = at::native_batch_norm_backward(Nchw(dy), Nchw(x), c.inputs[2], {}, {}, c.inputs[3],
                                                              c.inputs[4], true, kBatchNormEpsilon, {true, true, true});
  c.outputs[0] = Nhwc(dx);
  c.outputs[1] = dscale;
  c.outputs[2] = doffset;
  return true;
}

}  // namespace devplace::kernels
