// Products, element-wise ops, reductions, softmax and losses.
#include <algorithm>
#include <functional>

#include "exec/kernels/kernel_families.h"
#include "exec/kernels/kernel_shapes.h"

namespace devplace::kernels {

std::vector<at::Tensor> FloatInputs(const KernelCall& c) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : c.inputs) {
    if (t.defined() && at::isFloatingType(t.scalar_type())) out.push_back(t);
  }
  return out;
}

std::optional<Shape> Broadcast(at::IntArrayRef a, at::IntArrayRef b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<Shape> MatmulShape(at::IntArrayRef a, at::IntArrayRef b) {
  if (a.size() < 2 || b.size() < 2 || a[a.size() - 1] != b[b.size() - 2]) return std::nullopt;
  auto batch = Broadcast(a.slice(0, a.size() - 2), b.slice(0, b.size() - 2));
  if (!batch) return std::nullopt;
  batch->push_back(a[a.size() - 2]);
  batch->push_back(b[b.size() - 1]);
  return batch;
}

at::Tensor StateTensor(KernelCall& c, size_t i, const Shape& shape) {
  std::vector<at::Tensor>& state = c.state.tensors;
  if (state.size() <= i) state.resize(i + 1);
  if (!state[i].defined() || !Is(state[i], shape)) {
    state[i] = SeededTensor(TensorSpec::Make(shape), c.seed, c.op.name + "/state" + std::to_string(i), c.device);
  }
  return state[i];
}

// ---- products

// A, B among the float inputs and transposes of their last two dimensions
// that give the output's shape: the graph does not record TensorFlow's
// transpose_a / transpose_b, the shapes do.
bool MatMul(KernelCall& c) {
  if (c.outputs.size() != 1) return false;
  const Shape out = OutShape(c, 0);
  std::vector<at::Tensor> xs;
  for (const at::Tensor& t : FloatInputs(c)) {
    if (t.dim() >= 2) xs.push_back(t);
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    for (size_t j = 0; j < xs.size(); ++j) {
      if (i == j) continue;
      for (int ta = 0; ta < 2; ++ta) {
        for (int tb = 0; tb < 2; ++tb) {
          const at::Tensor a = ta ? xs[i].transpose(-1, -2) : xs[i];
          const at::Tensor b = tb ? xs[j].transpose(-1, -2) : xs[j];
          auto shape = MatmulShape(a.sizes(), b.sizes());
          if (!shape || *shape != out) continue;
          if (out.size() == 2) {
            at::mm_out(c.Out(0), a, b);
          } else {
            at::matmul_out(c.Out(0), a, b);
          }
          return true;
        }
      }
    }
  }
  return false;
}

// ---- element-wise

namespace {

// The input of the output's size, viewed in the output's shape.
std::optional<at::Tensor> SameSizeInput(const KernelCall& c, size_t skip = 0) {
  if (c.outputs.size() != 1) return std::nullopt;
  const Shape out = OutShape(c, 0);
  for (size_t i = skip; i < c.inputs.size(); ++i) {
    const at::Tensor& t = c.inputs[i];
    if (t.defined() && t.numel() == Numel(out)) return t.reshape(out);
  }
  return std::nullopt;
}

bool Unary(KernelCall& c, const std::function<void(at::Tensor&, const at::Tensor&)>& f) {
  auto x = SameSizeInput(c);
  if (!x) return false;
  f(c.Out(0), *x);
  return true;
}

// Two operands broadcasting to the output. An op with one input reads a
// constant (TensorFlow's scalar operand, not an edge in the graph); one
// with none reads a slot of its own (an optimizer's moment).
bool Binary(KernelCall& c, const std::function<void(at::Tensor&, const at::Tensor&, const at::Tensor&)>& f,
            double constant = 0.5) {
  if (c.outputs.size() != 1) return false;
  const Shape out = OutShape(c, 0);
  at::Tensor a, b;
  if (c.inputs.size() >= 2) {
    a = c.inputs[0];
    b = c.inputs[1];
  } else if (c.inputs.size() == 1) {
    a = c.inputs[0];
    b = at::scalar_tensor(constant, at::TensorOptions().dtype(a.scalar_type()).device(c.device));
  } else {
    a = StateTensor(c, 0, out);
    b = at::scalar_tensor(constant, at::TensorOptions().dtype(a.scalar_type()).device(c.device));
  }
  auto shape = Broadcast(a.sizes(), b.sizes());
  if (!shape) return false;
  at::Tensor& o = c.Out(0);
  if (*shape == out) {
    f(o, a, b);
    return true;
  }
  if (Numel(*shape) == Numel(out)) {
    at::Tensor view = o.view(*shape);
    f(view, a, b);
    return true;
  }
  // Operands the output broadcasts them to (a scaled position vector made
  // a matrix, TensorFlow's broadcast by shape).
  if (Broadcast(*shape, out) != out) return false;
  f(o, a.expand(out), b.expand(out));
  return true;
}

}  // namespace

bool Sigmoid(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::sigmoid_out(o, x); });
}
// x * sigmoid(x) (EfficientNet's activation; PyTorch's SiLU / swish).
bool Silu(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::silu_out(o, x); });
}
// The activations of MobileNet-V3 (hard swish, hard sigmoid) and of the
// vision transformers (exact GELU, aten's default).
bool Gelu(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::gelu_out(o, x); });
}
bool Hardswish(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::hardswish_out(o, x); });
}
bool Hardsigmoid(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::hardsigmoid_out(o, x); });
}
bool Tanh(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::tanh_out(o, x); });
}
bool Relu(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::clamp_min_out(o, x, 0); });
}
bool Exp(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::exp_out(o, x); });
}
bool Log(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::log_out(o, x); });
}
bool Neg(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::neg_out(o, x); });
}
bool Sqrt(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::sqrt_out(o, x); });
}
bool Rsqrt(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::rsqrt_out(o, x); });
}
bool Floor(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::floor_out(o, x); });
}
bool Abs(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::abs_out(o, x); });
}
bool Sin(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::sin_out(o, x); });
}
bool Cos(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::cos_out(o, x); });
}
bool Erf(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::erf_out(o, x); });
}
bool Square(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::mul_out(o, x, x); });
}
bool PowConstant(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { at::pow_out(o, x, 3.0); });
}
bool Cast(KernelCall& c) {
  return Unary(c, [](at::Tensor& o, const at::Tensor& x) { o.copy_(x); });
}

bool Add(KernelCall& c) {
  return Binary(c, [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) { at::add_out(o, a, b); });
}
bool Sub(KernelCall& c) {
  return Binary(c, [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) { at::sub_out(o, a, b); });
}
bool Mul(KernelCall& c) {
  return Binary(
      c, [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) { at::mul_out(o, a, b); }, 0.9);
}
bool Div(KernelCall& c) {
  return Binary(
      c, [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) { at::div_out(o, a, b); }, 2.0);
}
bool Maximum(KernelCall& c) {
  return Binary(
      c, [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) { at::maximum_out(o, a, b); }, 1.0);
}
bool Minimum(KernelCall& c) {
  return Binary(
      c, [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) { at::minimum_out(o, a, b); }, 1.0);
}
bool SquaredDifference(KernelCall& c) {
  return Binary(c, [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) {
    at::sub_out(o, a, b);
    o.mul_(o);
  });
}
bool FloorDiv(KernelCall& c) {
  // On shapes, whose values here may be zeros (ShapeMetadata): integer
  // division by zero would throw, so integer divisors are at least 1.
  return Binary(
      c,
      [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) {
        at::floor_divide_out(o, a, at::isFloatingType(b.scalar_type()) ? b : b.clamp_min(1));
      },
      2.0);
}
bool GreaterEqual(KernelCall& c) {
  return Binary(c, [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) { at::ge_out(o, a, b); });
}

// TensorFlow's gradient ops: SigmoidGrad(y, dy), TanhGrad(y, dy),
// ReluGrad(dy, y), RsqrtGrad(y, dy), SqrtGrad(y, dy).
bool SigmoidGrad(KernelCall& c) {
  return Binary(c,
                [](at::Tensor& o, const at::Tensor& y, const at::Tensor& dy) { at::sigmoid_backward_out(o, dy, y); });
}
bool TanhGrad(KernelCall& c) {
  return Binary(c, [](at::Tensor& o, const at::Tensor& y, const at::Tensor& dy) { at::tanh_backward_out(o, dy, y); });
}
bool ReluGrad(KernelCall& c) {
  return Binary(c, [](at::Tensor& o, const at::Tensor& dy, const at::Tensor& y) {
    at::threshold_backward_out(o, dy.expand_as(o), y.expand_as(o), 0);
  });
}
bool RsqrtGrad(KernelCall& c) {
  return Binary(c, [](at::Tensor& o, const at::Tensor& y, const at::Tensor& dy) {
    at::mul_out(o, y, y);  // -dy * y^3 / 2
    o.mul_(y).mul_(dy).mul_(-0.5);
  });
}
bool SqrtGrad(KernelCall& c) {
  return Binary(c, [](at::Tensor& o, const at::Tensor& y, const at::Tensor& dy) {
    at::div_out(o, dy, y);  // dy / (2 y)
    o.mul_(0.5);
  });
}

bool Select(KernelCall& c) {
  if (c.inputs.size() != 3 || c.outputs.size() != 1) return false;
  const Shape out = OutShape(c, 0);
  for (const at::Tensor& t : c.inputs) {
    if (t.numel() != Numel(out)) return false;
  }
  c.Out(0).copy_(at::where(c.inputs[0].to(at::kBool).reshape(out), c.inputs[1].reshape(out), c.inputs[2].reshape(out)));
  return true;
}

bool AddN(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.empty()) return false;
  const Shape out = OutShape(c, 0);
  for (const at::Tensor& t : c.inputs) {
    if (t.numel() != Numel(out)) return false;
  }
  at::Tensor& o = c.Out(0);
  if (c.inputs.size() == 1) {
    o.copy_(c.inputs[0].reshape(out));
    return true;
  }
  at::add_out(o, c.inputs[0].reshape(out), c.inputs[1].reshape(out));
  for (size_t i = 2; i < c.inputs.size(); ++i) o.add_(c.inputs[i].reshape(out));
  return true;
}

// ---- reductions

namespace {

// The dimensions of `in` that reducing to `out` removes: `out` is `in` with
// some dimensions set to 1 (keep_dims), or `in` with some dimensions left
// out, matched from the right (BiasAddGrad keeps the last, channels).
std::optional<std::pair<std::vector<int64_t>, bool>> ReducedDims(at::IntArrayRef in, const Shape& out) {
  std::vector<int64_t> dims;
  if (in.size() == out.size()) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (out[i] == in[i]) continue;
      if (out[i] != 1) return std::nullopt;
      dims.push_back(static_cast<int64_t>(i));
    }
    return std::make_pair(dims, true);
  }
  int64_t j = static_cast<int64_t>(out.size()) - 1;
  for (int64_t i = static_cast<int64_t>(in.size()) - 1; i >= 0; --i) {
    if (j >= 0 && in[i] == out[j]) {
      --j;
    } else {
      dims.push_back(i);
    }
  }
  if (j >= 0) return std::nullopt;
  std::reverse(dims.begin(), dims.end());
  return std::make_pair(dims, false);
}

using ReduceFn = std::function<void(at::Tensor&, const at::Tensor&, at::IntArrayRef, bool)>;

bool Reduce(KernelCall& c, const ReduceFn& f) {
  if (c.outputs.size() != 1 || c.inputs.empty() || !c.inputs[0].defined()) return false;
  const at::Tensor& x = c.inputs[0];
  const Shape out = OutShape(c, 0);
  if (x.numel() == Numel(out)) {
    // Reduces nothing: TensorFlow hands the buffer on.
    c.outputs[0] = x.reshape(out);
    return true;
  }
  auto dims = ReducedDims(x.sizes(), out);
  if (!dims || dims->first.empty()) return false;
  f(c.Out(0), x, dims->first, dims->second);
  return true;
}

}  // namespace

bool Sum(KernelCall& c) {
  return Reduce(c,
                [](at::Tensor& o, const at::Tensor& x, at::IntArrayRef d, bool keep) { at::sum_out(o, x, d, keep); });
}
bool Mean(KernelCall& c) {
  return Reduce(c,
                [](at::Tensor& o, const at::Tensor& x, at::IntArrayRef d, bool keep) { at::mean_out(o, x, d, keep); });
}
bool Max(KernelCall& c) {
  return Reduce(c,
                [](at::Tensor& o, const at::Tensor& x, at::IntArrayRef d, bool keep) { at::amax_out(o, x, d, keep); });
}

// sum(x^2) / 2 as one dot product: no temporary the size of x.
bool L2Loss(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.empty() || Numel(OutShape(c, 0)) != 1) return false;
  const at::Tensor& x = c.inputs[0];
  if (!at::isFloatingType(x.scalar_type())) return false;
  const at::Tensor flat = x.reshape({-1});
  c.Out(0).copy_(at::dot(flat, flat).mul_(0.5).reshape(OutShape(c, 0)));
  return true;
}

// ---- softmax and losses

bool Softmax(KernelCall& c) {
  auto x = SameSizeInput(c);
  if (!x || x->dim() == 0) return false;
  at::_softmax_out(c.Out(0), *x, -1, false);
  return true;
}

bool LogSoftmax(KernelCall& c) {
  auto x = SameSizeInput(c);
  if (!x || x->dim() == 0) return false;
  at::_log_softmax_out(c.Out(0), *x, -1, false);
  return true;
}

namespace {

// The fused cross-entropies' operands: logits [batch, classes] as the
// second output, and the labels, the other input.
bool CrossEntropyOperands(const KernelCall& c, at::Tensor* logits, at::Tensor* labels) {
  if (c.inputs.size() != 2 || c.outputs.size() != 2) return false;
  const Shape loss = OutShape(c, 0), backprop = OutShape(c, 1);
  if (backprop.size() != 2 || loss != Shape{backprop[0]}) return false;
  for (int i = 0; i < 2; ++i) {
    if (Is(c.inputs[i], backprop) && at::isFloatingType(c.inputs[i].scalar_type())) {
      *logits = c.inputs[i];
      *labels = c.inputs[1 - i];
      return true;
    }
  }
  return false;
}

}  // namespace

bool SoftmaxCrossEntropy(KernelCall& c) {
  at::Tensor logits, labels;
  if (!CrossEntropyOperands(c, &logits, &labels) || labels.numel() != logits.numel()) return false;
  const at::Tensor log_p = at::_log_softmax(logits, 1, false);
  const at::Tensor target = labels.reshape(logits.sizes()).to(logits.scalar_type());
  at::sum_out(c.Out(0), target * log_p, std::vector<int64_t>{1});
  c.Out(0).neg_();
  at::exp_out(c.Out(1), log_p);
  c.Out(1).sub_(target);
  return true;
}

bool SparseSoftmaxCrossEntropy(KernelCall& c) {
  at::Tensor logits, labels;
  if (!CrossEntropyOperands(c, &logits, &labels) || labels.numel() != logits.size(0)) return false;
  const at::Tensor log_p = at::_log_softmax(logits, 1, false);
  // Labels from a seeded source may exceed the classes: fold them in.
  const at::Tensor index = labels.reshape({-1, 1}).to(at::kLong).remainder(logits.size(1));
  at::neg_out(c.Out(0), log_p.gather(1, index).reshape({-1}));
  at::exp_out(c.Out(1), log_p);
  c.Out(1).scatter_add_(1, index, at::full({logits.size(0), 1}, -1.0, log_p.options()));
  return true;
}

// A scalar loss over every float input (ONNX import's "Loss", the
// synthetic graphs' "SoftmaxCrossEntropy"): the mean log-sum-exp of each
// input's rows, summed.
bool ScalarLoss(KernelCall& c) {
  if (c.outputs.size() != 1 || Numel(OutShape(c, 0)) != 1) return false;
  const std::vector<at::Tensor> xs = FloatInputs(c);
  if (xs.empty()) return false;
  at::Tensor& o = c.Out(0);
  o.zero_();
  for (const at::Tensor& x : xs) {
    if (x.numel() == 0) continue;
    const int64_t last = x.dim() == 0 ? 1 : x.size(-1);
    o.add_(at::logsumexp(x.reshape({-1, last}), {1}).mean().reshape(o.sizes()));
  }
  return true;
}

}  // namespace devplace::kernels
