#include "models/tf_ops.h"

#include <algorithm>
#include <cassert>

#include "models/checked.h"
#include "util/error.h"

namespace devplace::tf {
namespace {

TensorSpec F32(const Shape& shape) { return TensorSpec::Make(shape); }
TensorSpec I32(const Shape& shape) { return TensorSpec::Make(shape, "int32"); }

Shape ShapeVector(const Shape& of) { return {static_cast<int64_t>(of.size())}; }

// An op whose output shares its input's buffer: Reshape, ExpandDims, a Sum
// that reduces nothing.
Tensor Alias(B& b, const std::string& name, const std::string& type, std::vector<Tensor> inputs, Shape shape) {
  OpSpec spec{name, type, std::move(inputs), {F32(shape)}, 0};
  spec.aliases_input = true;
  return b.Emit(std::move(spec));
}

// tf.shape(x): reads only x's shape, but as a data edge it keeps x alive
// until it runs, as in TensorFlow 1.x graphs.
Tensor ShapeOf(B& b, Tensor x, const std::string& name = "Shape") {
  OpSpec spec{name, "Shape", {x}, {I32(ShapeVector(b.shape(x)))}, 0};
  spec.aliases_input = true;
  return b.Emit(std::move(spec));
}

Shape Broadcast(const Shape& x, const Shape& y) {
  Shape out(std::max(x.size(), y.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t dx = i < out.size() - x.size() ? 1 : x[i - (out.size() - x.size())];
    int64_t dy = i < out.size() - y.size() ? 1 : y[i - (out.size() - y.size())];
    assert(dx == dy || dx == 1 || dy == 1);
    out[i] = std::max(dx, dy);
  }
  return out;
}

// Sum `t` down to `target`'s shape and reshape to it: the tail of every
// broadcasting binary op's gradient.
Tensor ReduceTo(B& b, Tensor t, Tensor reduction_axes, Tensor target_shape, const Shape& target, bool negate = false) {
  const Shape& from = b.shape(t);
  Tensor sum;
  if (Elements(from) == Elements(target)) {
    sum = b.Emit([&] {
      OpSpec spec{"Sum", "Sum", {t, reduction_axes}, {F32(target)}, 0};
      spec.aliases_input = true;  // reduces nothing: TF hands the buffer on
      return spec;
    }());
  } else {
    sum = Plain(b, "Sum", "Sum", {t, reduction_axes}, target, static_cast<double>(Elements(from)));
  }
  if (negate) sum = Plain(b, "Neg", "Neg", {sum}, target, static_cast<double>(Elements(target)));
  return Alias(b, "Reshape", "Reshape", {sum, target_shape}, target);
}

}  // namespace

int64_t Elements(const Shape& shape) { return models::CheckedElements(shape); }

Tensor Plain(B& b, const std::string& name, const std::string& type, std::vector<Tensor> inputs, Shape shape,
             double flops, const std::string& dtype) {
  return b.Emit({name, type, std::move(inputs), {TensorSpec::Make(std::move(shape), dtype)}, flops});
}

Tensor Const(B& b, const std::string& name, Shape shape, const std::string& dtype) {
  OpSpec spec{name, "Const", {}, {TensorSpec::Make(std::move(shape), dtype)}, 0};
  spec.aliases_input = true;  // its value lives in the graph
  return b.Emit(std::move(spec));
}

Tensor MatMul(B& b, const std::string& name, Tensor a, Tensor w, bool transpose_a, bool transpose_b) {
  const Shape& sa = b.shape(a);
  const Shape& sw = b.shape(w);
  assert(sa.size() == 2 && sw.size() == 2);
  const int64_t m = transpose_a ? sa[1] : sa[0];
  const int64_t k = transpose_a ? sa[0] : sa[1];
  const int64_t n = transpose_b ? sw[0] : sw[1];
  assert(k == (transpose_b ? sw[1] : sw[0]));
  const double flops = 2.0 * m * n * k;
  OpSpec spec{name, "MatMul", {a, w}, {F32({m, n})}, flops};
  spec.grad = [flops, transpose_a, transpose_b](GradContext& g) {
    B& bb = g.builder;
    const Tensor a = g.inputs[0], w = g.inputs[1], dy = g.dy();
    // TensorFlow's _MatMulGrad: each input's gradient is one MatMul of the
    // same size as the forward one.
    auto mm = [&](const char* n, Tensor x, Tensor y, const Shape& out) {
      return bb.Emit({n, "MatMul", {x, y}, {F32(out)}, flops});
    };
    if (g.needs(0)) g.input_grads[0].values = mm("MatMul", transpose_a ? w : dy, transpose_a ? dy : w, bb.shape(a));
    if (g.needs(1)) g.input_grads[1].values = mm("MatMul_1", transpose_b ? dy : a, transpose_b ? a : dy, bb.shape(w));
  };
  return b.Emit(std::move(spec));
}

Tensor BatchMatMul(B& b, const std::string& name, Tensor x, Tensor y, bool adj_x, bool adj_y) {
  const Shape& sx = b.shape(x);
  const Shape& sy = b.shape(y);
  const size_t r = sx.size();
  assert(r >= 3 && sy.size() == r);
  const int64_t m = adj_x ? sx[r - 1] : sx[r - 2];
  const int64_t k = adj_x ? sx[r - 2] : sx[r - 1];
  const int64_t n = adj_y ? sy[r - 2] : sy[r - 1];
  Shape out(sx.begin(), sx.end() - 2);
  const double batch = static_cast<double>(Elements(out));
  out.push_back(m);
  out.push_back(n);
  const double flops = 2.0 * batch * m * n * k;
  OpSpec spec{name, "BatchMatMul", {x, y}, {F32(out)}, flops};
  spec.grad = [flops](GradContext& g) {
    B& bb = g.builder;
    if (g.needs(0)) g.input_grads[0].values = bb.Emit({"MatMul", "BatchMatMul", {g.dy(), g.inputs[1]}, {F32(bb.shape(g.inputs[0]))}, flops});
    if (g.needs(1)) g.input_grads[1].values = bb.Emit({"MatMul_1", "BatchMatMul", {g.inputs[0], g.dy()}, {F32(bb.shape(g.inputs[1]))}, flops});
  };
  return b.Emit(std::move(spec));
}

Tensor BiasAdd(B& b, const std::string& name, Tensor x, Tensor bias) {
  const Shape out = b.shape(x);
  OpSpec spec{name, "BiasAdd", {x, bias}, {F32(out)}, static_cast<double>(Elements(out))};
  spec.grad = [](GradContext& g) {
    if (g.needs(0)) g.input_grads[0].values = g.dy();  // passes through
    if (g.needs(1)) {
      B& bb = g.builder;
      g.input_grads[1].values = Plain(bb, "BiasAddGrad", "BiasAddGrad", {g.dy()}, bb.shape(g.inputs[1]),
                                      static_cast<double>(Elements(bb.shape(g.dy()))));
    }
  };
  return b.Emit(std::move(spec));
}

Tensor Binary(B& b, const std::string& type, const std::string& name, Tensor x, Tensor y) {
  const Shape out = Broadcast(b.shape(x), b.shape(y));
  const double per_element = type == "SquaredDifference" ? 2 : 1;
  OpSpec spec{name, type, {x, y}, {F32(out)}, per_element * Elements(out)};
  spec.grad = [type](GradContext& g) {
    B& bb = g.builder;
    const Tensor x = g.inputs[0], y = g.inputs[1], dy = g.dy();
    const Shape out = bb.shape(dy);
    const double n = static_cast<double>(Elements(out));
    // TensorFlow 1.x's gradient of a broadcasting binary op: both input
    // shapes, the axes each was broadcast along, then per input a Sum over
    // those axes and a Reshape back.
    Tensor sx = ShapeOf(bb, x, "Shape");
    Tensor sy = ShapeOf(bb, y, "Shape_1");
    std::vector<Tensor> axes = bb.EmitAll({"BroadcastGradientArgs", "BroadcastGradientArgs", {sx, sy},
                                           {I32({1}), I32({1})}, 0});
    Tensor common;  // SquaredDifference: 2 * dy * (x - y), shared by both
    if (type == "SquaredDifference") {
      Tensor scaled = Plain(bb, "mul", "Mul", {dy}, out, n);
      Tensor diff = Plain(bb, "sub", "Sub", {x, y}, out, n);
      common = Plain(bb, "mul_1", "Mul", {scaled, diff}, out, n);
    }
    for (int i = 0; i < 2; ++i) {
      if (!g.needs(i)) continue;
      const Tensor self = g.inputs[i], other = g.inputs[1 - i];
      Tensor t = dy;
      bool negate = false;
      if (type == "Mul") {
        t = Plain(bb, "Mul", "Mul", {dy, other}, out, n);
      } else if (type == "RealDiv") {
        if (i == 0) {
          t = Plain(bb, "RealDiv", "RealDiv", {dy, y}, out, n);
        } else {
          Tensor neg = Plain(bb, "Neg", "Neg", {x}, bb.shape(x), double(Elements(bb.shape(x))));
          Tensor d1 = Plain(bb, "RealDiv_1", "RealDiv", {neg, y}, out, n);
          Tensor d2 = Plain(bb, "RealDiv_2", "RealDiv", {d1, y}, out, n);
          t = Plain(bb, "mul", "Mul", {dy, d2}, out, n);
        }
      } else if (type == "SquaredDifference") {
        t = common;
        negate = i == 1;
      } else if (type == "Maximum") {
        Tensor mask = Plain(bb, "GreaterEqual", "GreaterEqual", {x, y}, out, n, "bool");
        Tensor zeros = Plain(bb, "zeros", "ZerosLike", {dy}, out, n);
        t = Plain(bb, "Select", "Select", {mask, i == 0 ? dy : zeros, i == 0 ? zeros : dy}, out, n);
      } else if (type == "Sub") {
        negate = i == 1;
      }
      g.input_grads[i].values = ReduceTo(bb, t, axes[i], i == 0 ? sx : sy, bb.shape(self), negate);
    }
  };
  return b.Emit(std::move(spec));
}

Tensor AddN(B& b, const std::string& name, const std::vector<Tensor>& xs) {
  const Shape out = b.shape(xs.front());
  OpSpec spec{name, "AddN", xs, {F32(out)}, static_cast<double>(xs.size() - 1) * Elements(out)};
  spec.grad = [](GradContext& g) {
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (g.needs(static_cast<int>(i))) g.input_grads[i].values = g.dy();
    }
  };
  return b.Emit(std::move(spec));
}

Tensor L2Loss(B& b, const std::string& name, Tensor x) {
  OpSpec spec{name, "L2Loss", {x}, {F32({})}, 2.0 * Elements(b.shape(x))};
  spec.grad = [](GradContext& g) {
    if (!g.needs(0)) return;
    B& bb = g.builder;
    // _L2LossGrad: x * dy.
    g.input_grads[0].values = Plain(bb, "mul", "Mul", {g.inputs[0], g.dy()}, bb.shape(g.inputs[0]),
                                    double(Elements(bb.shape(g.inputs[0]))));
  };
  return b.Emit(std::move(spec));
}

Tensor Unary(B& b, const std::string& type, const std::string& name, Tensor x) {
  const Shape out = b.shape(x);
  const double n = static_cast<double>(Elements(out));
  const bool transcendental = type == "Sigmoid" || type == "Tanh" || type == "Exp" || type == "Rsqrt" ||
                              type == "Sqrt" || type == "Pow";
  const bool copies = type == "Identity" || type == "StopGradient";
  OpSpec spec{name, type, {x}, {F32(out)}, copies ? 0 : (transcendental ? 4 * n : n)};
  spec.aliases_input = copies;
  if (type == "StopGradient" || type == "Floor") return b.Emit(std::move(spec));
  spec.grad = [type](GradContext& g) {
    if (!g.needs(0)) return;
    B& bb = g.builder;
    const Tensor x = g.inputs[0], y = g.outputs[0], dy = g.dy();
    const Shape out = bb.shape(dy);
    const double n = static_cast<double>(Elements(out));
    Tensor dx;
    if (type == "Identity") {
      dx = dy;
    } else if (type == "Sigmoid" || type == "Tanh" || type == "Rsqrt" || type == "Sqrt") {
      dx = Plain(bb, type + "Grad", type + "Grad", {y, dy}, out, 3 * n);
    } else if (type == "Relu") {
      dx = Plain(bb, "ReluGrad", "ReluGrad", {dy, y}, out, n);
    } else if (type == "Exp") {
      dx = Plain(bb, "mul", "Mul", {dy, y}, out, n);
    } else if (type == "Neg") {
      dx = Plain(bb, "Neg", "Neg", {dy}, out, n);
    } else if (type == "Square") {
      Tensor two_x = Plain(bb, "mul", "Mul", {x}, out, n);
      dx = Plain(bb, "mul_1", "Mul", {dy, two_x}, out, n);
    } else if (type == "Pow") {
      // _PowGrad for a constant exponent: y * x^(y-1) * dy, then the
      // broadcast reduction.
      Tensor sx = ShapeOf(bb, x);
      Tensor power = Plain(bb, "Pow", "Pow", {x}, out, 4 * n);
      Tensor scaled = Plain(bb, "mul", "Mul", {dy, power}, out, n);
      Tensor times_exponent = Plain(bb, "mul_1", "Mul", {scaled}, out, n);
      Tensor axes = Plain(bb, "BroadcastGradientArgs", "BroadcastGradientArgs", {sx}, {1}, 0, "int32");
      dx = ReduceTo(bb, times_exponent, axes, sx, out);
    } else {
      dx = Plain(bb, type + "Grad", type + "Grad", {x, dy}, out, n);
    }
    g.input_grads[0].values = dx;
  };
  return b.Emit(std::move(spec));
}

std::vector<Tensor> Split(B& b, const std::string& name, Tensor x, int axis, int parts) {
  Shape piece = b.shape(x);
  assert(piece[axis] % parts == 0);
  piece[axis] /= parts;
  OpSpec spec{name, "Split", {x}, std::vector<TensorSpec>(parts, F32(piece)), 0};
  spec.grad = [](GradContext& g) {
    if (!g.needs(0)) return;
    B& bb = g.builder;
    // _SplitGrad: concatenate the pieces' gradients (zeros where none).
    std::vector<Tensor> pieces;
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      Tensor d = g.output_grads[i];
      if (!d.valid()) {
        d = Plain(bb, "zeros_like", "ZerosLike", {g.outputs[i]}, bb.shape(g.outputs[i]),
                  double(Elements(bb.shape(g.outputs[i]))));
      }
      pieces.push_back(d);
    }
    g.input_grads[0].values = Plain(bb, "concat", "ConcatV2", pieces, bb.shape(g.inputs[0]));
  };
  return b.EmitAll(std::move(spec));
}

Tensor Concat(B& b, const std::string& name, const std::vector<Tensor>& xs, int axis) {
  Shape out = b.shape(xs.front());
  out[axis] = 0;
  for (const Tensor& t : xs) out[axis] += b.shape(t)[axis];
  OpSpec spec{name, "ConcatV2", xs, {F32(out)}, 0};
  spec.grad = [](GradContext& g) {
    B& bb = g.builder;
    // _ConcatGradHelper: the inputs' shapes (ShapeN reads every input, so
    // all stay alive until the backward pass), their offsets, one Slice each.
    const int32_t n = static_cast<int32_t>(g.inputs.size());
    std::vector<TensorSpec> shapes(n, I32(ShapeVector(bb.shape(g.inputs[0]))));
    OpSpec shape_n{"ShapeN", "ShapeN", g.inputs, shapes, 0};
    shape_n.aliases_input = true;
    std::vector<Tensor> sizes = bb.EmitAll(std::move(shape_n));
    std::vector<Tensor> offsets = bb.EmitAll({"ConcatOffset", "ConcatOffset", sizes, shapes, 0});
    for (int32_t i = 0; i < n; ++i) {
      if (!g.needs(i)) continue;
      const Shape& s = bb.shape(g.inputs[i]);
      g.input_grads[i].values = bb.Emit({"Slice", "Slice", {g.dy(), offsets[i], sizes[i]}, {F32(s)}, 0});
    }
  };
  return b.Emit(std::move(spec));
}

Tensor Pack(B& b, const std::string& name, const std::vector<Tensor>& xs, int axis) {
  Shape out = b.shape(xs.front());
  out.insert(out.begin() + axis, static_cast<int64_t>(xs.size()));
  OpSpec spec{name, "Pack", xs, {F32(out)}, 0};
  spec.grad = [](GradContext& g) {
    B& bb = g.builder;
    const Shape piece = bb.shape(g.inputs[0]);
    std::vector<Tensor> pieces = bb.EmitAll(
        {"unstack", "Unpack", {g.dy()}, std::vector<TensorSpec>(g.inputs.size(), F32(piece)), 0});
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (g.needs(static_cast<int>(i))) g.input_grads[i].values = pieces[i];
    }
  };
  return b.Emit(std::move(spec));
}

Tensor Reshape(B& b, const std::string& name, Tensor x, Shape shape) {
  assert(Elements(shape) == Elements(b.shape(x)));
  OpSpec spec{name, "Reshape", {x}, {F32(shape)}, 0};
  spec.aliases_input = true;
  spec.grad = [](GradContext& g) {
    if (!g.needs(0)) return;
    B& bb = g.builder;
    Tensor s = ShapeOf(bb, g.inputs[0]);
    g.input_grads[0].values = Alias(bb, "Reshape", "Reshape", {g.dy(), s}, bb.shape(g.inputs[0]));
  };
  return b.Emit(std::move(spec));
}

Tensor Transpose(B& b, const std::string& name, Tensor x, const std::vector<int>& perm) {
  const Shape& in = b.shape(x);
  Shape out(in.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = in[perm[i]];
  OpSpec spec{name, "Transpose", {x}, {F32(out)}, 0};
  spec.grad = [](GradContext& g) {
    if (!g.needs(0)) return;
    B& bb = g.builder;
    Tensor inverse = Plain(bb, "InvertPermutation", "InvertPermutation", {}, {int64_t(bb.shape(g.dy()).size())}, 0, "int32");
    g.input_grads[0].values = bb.Emit({"transpose", "Transpose", {g.dy(), inverse}, {F32(bb.shape(g.inputs[0]))}, 0});
  };
  return b.Emit(std::move(spec));
}

Tensor Slice(B& b, const std::string& name, Tensor x, Shape size) {
  OpSpec spec{name, "Slice", {x}, {F32(size)}, 0};
  spec.grad = [](GradContext& g) {
    if (!g.needs(0)) return;
    B& bb = g.builder;
    // _SliceGrad: pad the gradient back to the input's shape.
    Tensor sx = ShapeOf(bb, g.inputs[0]);
    Tensor sy = ShapeOf(bb, g.outputs[0], "Shape_1");
    Tensor after = Plain(bb, "sub", "Sub", {sx, sy}, ShapeVector(bb.shape(g.inputs[0])), 0, "int32");
    Tensor paddings = Plain(bb, "concat", "ConcatV2", {after}, {int64_t(bb.shape(g.inputs[0]).size()), 2}, 0, "int32");
    g.input_grads[0].values = bb.Emit({"Pad", "Pad", {g.dy(), paddings}, {F32(bb.shape(g.inputs[0]))}, 0});
  };
  return b.Emit(std::move(spec));
}

Tensor Pad(B& b, const std::string& name, Tensor x, Shape padded) {
  OpSpec spec{name, "Pad", {x}, {F32(padded)}, 0};
  spec.grad = [](GradContext& g) {
    if (!g.needs(0)) return;
    B& bb = g.builder;
    g.input_grads[0].values = bb.Emit({"Slice", "Slice", {g.dy()}, {F32(bb.shape(g.inputs[0]))}, 0});
  };
  return b.Emit(std::move(spec));
}

Tensor Reduce(B& b, const std::string& type, const std::string& name, Tensor x, const std::vector<int>& axes,
              bool keep_dims) {
  const Shape& in = b.shape(x);
  Shape out;
  for (int i = 0; i < static_cast<int>(in.size()); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) {
      out.push_back(in[i]);
    } else if (keep_dims) {
      out.push_back(1);
    }
  }
  OpSpec spec{name, type, {x}, {F32(out)}, static_cast<double>(Elements(in))};
  spec.grad = [type](GradContext& g) {
    if (!g.needs(0)) return;
    B& bb = g.builder;
    const Shape& in = bb.shape(g.inputs[0]);
    const double n = static_cast<double>(Elements(in));
    // _SumGrad: reshape the gradient to the kept-dims shape and tile it
    // over the input's shape.
    Tensor sx = ShapeOf(bb, g.inputs[0]);
    Tensor kept = Plain(bb, "DynamicStitch", "DynamicStitch", {sx}, ShapeVector(in), 0, "int32");
    Tensor scaling = Plain(bb, "floordiv", "FloorDiv", {sx, kept}, ShapeVector(in), 0, "int32");
    Tensor reshaped = Alias(bb, "Reshape", "Reshape", {g.dy(), kept}, bb.shape(g.dy()));
    Tensor tiled = Plain(bb, "Tile", "Tile", {reshaped, scaling}, in, n);
    if (type == "Mean") {
      // _MeanGrad: divide by the number of elements averaged.
      Tensor sy = ShapeOf(bb, g.outputs[0], "Shape_1");
      Tensor in_size = Plain(bb, "Prod", "Prod", {sx}, {}, 0, "int32");
      Tensor out_size = Plain(bb, "Prod_1", "Prod", {sy}, {}, 0, "int32");
      Tensor at_least_one = Plain(bb, "Maximum", "Maximum", {out_size}, {}, 0, "int32");
      Tensor factor = Plain(bb, "floordiv_1", "FloorDiv", {in_size, at_least_one}, {}, 0, "int32");
      Tensor as_float = Plain(bb, "Cast", "Cast", {factor}, {}, 0);
      tiled = Plain(bb, "truediv", "RealDiv", {tiled, as_float}, in, n);
    }
    g.input_grads[0].values = tiled;
  };
  return b.Emit(std::move(spec));
}

Tensor Softmax(B& b, const std::string& name, Tensor logits) {
  const Shape out = b.shape(logits);
  OpSpec spec{name, "Softmax", {logits}, {F32(out)}, 5.0 * Elements(out)};
  spec.grad = [](GradContext& g) {
    if (!g.needs(0)) return;
    B& bb = g.builder;
    const Shape out = bb.shape(g.dy());
    const double n = static_cast<double>(Elements(out));
    Shape reduced = out;
    reduced.back() = 1;
    // _SoftmaxGrad: (dy - sum(dy * y, -1)) * y.
    Tensor product = Plain(bb, "mul", "Mul", {g.dy(), g.outputs[0]}, out, n);
    Tensor sum = Plain(bb, "Sum", "Sum", {product}, reduced, n);
    Tensor diff = Plain(bb, "sub", "Sub", {g.dy(), sum}, out, n);
    g.input_grads[0].values = Plain(bb, "mul_1", "Mul", {diff, g.outputs[0]}, out, n);
  };
  return b.Emit(std::move(spec));
}

namespace {

CrossEntropy CrossEntropyOp(B& b, const std::string& type, const std::string& name, Tensor logits, Tensor labels) {
  const Shape& s = b.shape(logits);
  assert(s.size() == 2);
  OpSpec spec{name, type, {logits, labels}, {F32({s[0]}), F32(s)}, 6.0 * Elements(s)};
  spec.grad = [](GradContext& g) {
    if (!g.needs(0)) return;
    B& bb = g.builder;
    // The fused op computed d loss / d logits in the forward pass; the
    // backward pass scales it by the incoming gradient (_BroadcastMul).
    Tensor kept = Alias(bb, "PreventGradient", "PreventGradient", {g.outputs[1]}, bb.shape(g.outputs[1]));
    Tensor column = Alias(bb, "ExpandDims", "ExpandDims", {g.dy(0)}, {bb.shape(g.dy(0))[0], 1});
    g.input_grads[0].values = Plain(bb, "mul", "Mul", {column, kept}, bb.shape(g.outputs[1]),
                                    double(Elements(bb.shape(g.outputs[1]))));
  };
  std::vector<Tensor> out = b.EmitAll(std::move(spec));
  return {out[0], out[1]};
}

}  // namespace

CrossEntropy SparseSoftmaxCrossEntropy(B& b, const std::string& name, Tensor logits, Tensor labels) {
  return CrossEntropyOp(b, "SparseSoftmaxCrossEntropyWithLogits", name, logits, labels);
}

CrossEntropy SoftmaxCrossEntropy(B& b, const std::string& name, Tensor logits, Tensor labels) {
  return CrossEntropyOp(b, "SoftmaxCrossEntropyWithLogits", name, logits, labels);
}

Tensor Gather(B& b, const std::string& name, Tensor params, Tensor indices) {
  Shape out = b.shape(indices);
  const Shape& p = b.shape(params);
  out.insert(out.end(), p.begin() + 1, p.end());
  OpSpec spec{name, "GatherV2", {params, indices}, {F32(out)}, 0};
  spec.grad = [](GradContext& g) {
    if (!g.needs(0)) return;
    B& bb = g.builder;
    // _GatherV2Grad: IndexedSlices of the incoming gradient's rows and the
    // indices, built from the params' shape and the indices' size.
    const Shape& p = bb.shape(g.inputs[0]);
    const int64_t rows = Elements(bb.shape(g.inputs[1]));
    Tensor params_shape = ShapeOf(bb, g.inputs[0]);
    Tensor size = Plain(bb, "Size", "Size", {g.inputs[1]}, {}, 0, "int32");
    Tensor size_vector = Plain(bb, "ExpandDims", "ExpandDims", {size}, {1}, 0, "int32");
    Tensor tail = Plain(bb, "strided_slice", "StridedSlice", {params_shape}, {int64_t(p.size()) - 1}, 0, "int32");
    Tensor values_shape = Plain(bb, "concat", "ConcatV2", {size_vector, tail}, ShapeVector(p), 0, "int32");
    Shape value_dims{rows};
    value_dims.insert(value_dims.end(), p.begin() + 1, p.end());
    Tensor values = Alias(bb, "Reshape", "Reshape", {g.dy(), values_shape}, value_dims);
    OpSpec idx{"Reshape_1", "Reshape", {g.inputs[1], size_vector}, {I32({rows})}, 0};
    idx.aliases_input = true;
    Tensor flat_indices = bb.Emit(std::move(idx));
    g.input_grads[0] = {values, flat_indices};
  };
  return b.Emit(std::move(spec));
}

namespace {

int64_t ConvOut(int64_t in, int64_t k, int stride, Padding padding, int dilation) {
  const int64_t effective = (k - 1) * dilation + 1;
  if (padding == Padding::kValid && in < effective) {
    // Truncating division would make this a size of 1; TensorFlow refuses.
    throw Error("a VALID window of " + std::to_string(effective) + " is wider than its input of " +
                std::to_string(in) + " (the image or sequence is too small for the model)");
  }
  return padding == Padding::kSame ? (in + stride - 1) / stride : (in - effective) / stride + 1;
}

}  // namespace

Tensor Conv2D(B& b, const std::string& name, Tensor x, Tensor filter, int stride, Padding padding, int dilation) {
  const Shape& in = b.shape(x);
  const Shape& f = b.shape(filter);
  assert(in.size() == 4 && f.size() == 4 && in[3] == f[2]);
  const Shape out{in[0], ConvOut(in[1], f[0], stride, padding, dilation), ConvOut(in[2], f[1], stride, padding, dilation),
                  f[3]};
  const double flops = 2.0 * out[0] * out[1] * out[2] * out[3] * f[2] * f[0] * f[1];
  OpSpec spec{name, "Conv2D", {x, filter}, {F32(out)}, flops};
  spec.grad = [flops](GradContext& g) {
    B& bb = g.builder;
    if (g.needs(0)) {
      Tensor sx = ShapeOf(bb, g.inputs[0]);
      g.input_grads[0].values = bb.Emit({"Conv2DBackpropInput", "Conv2DBackpropInput", {sx, g.inputs[1], g.dy()},
                                         {F32(bb.shape(g.inputs[0]))}, flops});
    }
    if (g.needs(1)) {
      Tensor sw = ShapeOf(bb, g.inputs[1], "Shape_1");
      g.input_grads[1].values = bb.Emit({"Conv2DBackpropFilter", "Conv2DBackpropFilter", {g.inputs[0], sw, g.dy()},
                                         {F32(bb.shape(g.inputs[1]))}, flops});
    }
  };
  return b.Emit(std::move(spec));
}

Tensor DepthwiseConv2D(B& b, const std::string& name, Tensor x, Tensor filter, int stride, Padding padding) {
  const Shape& in = b.shape(x);
  const Shape& f = b.shape(filter);
  assert(in.size() == 4 && f.size() == 4 && in[3] == f[2]);
  const Shape out{in[0], ConvOut(in[1], f[0], stride, padding, 1), ConvOut(in[2], f[1], stride, padding, 1), f[2] * f[3]};
  const double flops = 2.0 * out[0] * out[1] * out[2] * out[3] * f[0] * f[1];
  OpSpec spec{name, "DepthwiseConv2dNative", {x, filter}, {F32(out)}, flops};
  spec.grad = [flops](GradContext& g) {
    B& bb = g.builder;
    if (g.needs(0)) {
      Tensor sx = ShapeOf(bb, g.inputs[0]);
      g.input_grads[0].values = bb.Emit({"DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropInput",
                                         {sx, g.inputs[1], g.dy()}, {F32(bb.shape(g.inputs[0]))}, flops});
    }
    if (g.needs(1)) {
      Tensor sw = ShapeOf(bb, g.inputs[1], "Shape_1");
      g.input_grads[1].values = bb.Emit({"DepthwiseConv2dNativeBackpropFilter", "DepthwiseConv2dNativeBackpropFilter",
                                         {g.inputs[0], sw, g.dy()}, {F32(bb.shape(g.inputs[1]))}, flops});
    }
  };
  return b.Emit(std::move(spec));
}

Tensor Pool(B& b, const std::string& type, const std::string& name, Tensor x, int kh, int kw, int stride,
            Padding padding) {
  const Shape& in = b.shape(x);
  const Shape out{in[0], ConvOut(in[1], kh, stride, padding, 1), ConvOut(in[2], kw, stride, padding, 1), in[3]};
  const double flops = static_cast<double>(Elements(out)) * kh * kw;
  OpSpec spec{name, type, {x}, {F32(out)}, flops};
  spec.grad = [type, flops](GradContext& g) {
    if (!g.needs(0)) return;
    B& bb = g.builder;
    const Shape& in = bb.shape(g.inputs[0]);
    if (type == "MaxPool") {
      g.input_grads[0].values = bb.Emit({"MaxPoolGrad", "MaxPoolGrad", {g.inputs[0], g.outputs[0], g.dy()}, {F32(in)}, flops});
    } else {
      Tensor sx = ShapeOf(bb, g.inputs[0]);
      g.input_grads[0].values = bb.Emit({"AvgPoolGrad", "AvgPoolGrad", {sx, g.dy()}, {F32(in)}, flops});
    }
  };
  return b.Emit(std::move(spec));
}

FusedBatchNormResult FusedBatchNorm(B& b, const std::string& name, Tensor x, Tensor scale, Tensor offset) {
  const Shape s = b.shape(x);
  const Shape c{s.back()};
  OpSpec spec{name, "FusedBatchNorm", {x, scale, offset}, {F32(s), F32(c), F32(c), F32(c), F32(c)},
              5.0 * Elements(s)};
  spec.grad = [](GradContext& g) {
    B& bb = g.builder;
    const Shape s = bb.shape(g.inputs[0]);
    const Shape c{s.back()};
    // Reads the input and the saved mean and inverse variance.
    std::vector<Tensor> d = bb.EmitAll({"FusedBatchNormGrad", "FusedBatchNormGrad",
                                        {g.dy(0), g.inputs[0], g.inputs[1], g.outputs[3], g.outputs[4]},
                                        {F32(s), F32(c), F32(c)}, 10.0 * Elements(s)});
    for (int i = 0; i < 3; ++i) {
      if (g.needs(i)) g.input_grads[i].values = d[i];
    }
  };
  std::vector<Tensor> out = b.EmitAll(std::move(spec));
  return {out[0], out[1], out[2]};
}

Tensor Dropout(B& b, const std::string& name, Tensor x) {
  auto scope = b.NameScope(name);
  const Shape& s = b.shape(x);
  const double n = static_cast<double>(Elements(s));
  // keep_prob + uniform noise, floored: a 0/1 mask the size of x, drawn
  // once x's shape is known and kept until the backward pass.
  Tensor noise_shape = ShapeOf(b, x);
  Tensor uniform = Plain(b, "random_uniform", "RandomUniform", {noise_shape}, s, n);
  Tensor shifted = Plain(b, "add", "Add", {uniform}, s, n);
  Tensor mask = Plain(b, "Floor", "Floor", {shifted}, s, n);
  Tensor keep_prob = Const(b, "keep_prob", {});
  Tensor scaled = Binary(b, "RealDiv", "div", x, keep_prob);
  return Binary(b, "Mul", "mul", scaled, mask);
}

}  // namespace devplace::tf
