// Sources (variables, input batches, constants), data movement (views,
// concatenation, splits, slices, tiles, transposes), embeddings and their
// sparse gradients, and optimizer updates.
//
// An optimizer update has no data edge from its variable (the graph keeps
// the variable's memory on the variable op, co-located with the update), so
// the update's kernel keeps its own copy of the value and slots and updates
// those: the same reads and writes as TensorFlow's in-place update, and
// the variable the forward pass reads stays the same from step to step,
// which keeps every step's results equal whatever the placement.
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <bit>

#include "exec/kernels/kernel_families.h"
#include "exec/kernels/kernel_shapes.h"

namespace devplace::kernels {

// ---- sources

bool Variable(KernelCall& c) {
  if (c.outputs.size() != 1) return false;
  const TensorSpec& spec = c.op.outputs[0];
  std::vector<at::Tensor>& state = c.state.tensors;
  if (state.empty()) state.push_back(SeededTensor(spec, c.seed, c.op.name, c.device));
  if (spec.aliases_persistent) {
    c.outputs[0] = state[0];  // a view of the variable's memory
  } else {
    c.Out(0).copy_(state[0]);
  }
  return true;
}

namespace {

// The op's seeded values, one per output, made on its first run.
std::vector<at::Tensor>& SeededOutputs(KernelCall& c) {
  std::vector<at::Tensor>& state = c.state.tensors;
  if (state.size() != c.outputs.size()) {
    state.clear();
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      state.push_back(SeededTensor(c.op.outputs[i], c.seed, c.op.name + ":" + std::to_string(i), c.device));
    }
  }
  return state;
}

}  // namespace

// A fresh batch each step: a copy out of the pipeline's buffer.
bool InputBatch(KernelCall& c) {
  const std::vector<at::Tensor>& values = SeededOutputs(c);
  for (size_t i = 0; i < c.outputs.size(); ++i) c.Out(static_cast<int32_t>(i)).copy_(values[i]);
  return true;
}

// A constant lives in the graph: its output is a view.
bool Constant(KernelCall& c) {
  const std::vector<at::Tensor>& values = SeededOutputs(c);
  for (size_t i = 0; i < c.outputs.size(); ++i) c.outputs[i] = values[i];
  return true;
}

bool RandomUniform(KernelCall& c) {
  if (c.outputs.size() != 1 || !c.device.is_cpu() || !at::isFloatingType(ScalarTypeOf(c.op.outputs[0].dtype))) {
    return false;
  }
  // Seeded by the op's name, so that every placement draws the same mask.
  uint64_t h = c.seed;
  for (unsigned char ch : c.op.name) h = (h ^ ch) * 0x100000001b3ull;
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(h);
  c.Out(0).uniform_(0, 1, generator);
  return true;
}

bool Fill(KernelCall& c) {
  for (size_t i = 0; i < c.outputs.size(); ++i) c.Out(static_cast<int32_t>(i)).fill_(1);
  return true;
}

bool ZerosLike(KernelCall& c) {
  for (size_t i = 0; i < c.outputs.size(); ++i) c.Out(static_cast<int32_t>(i)).zero_();
  return true;
}

// Shape, ShapeN: the sizes of each input.
bool ShapeOfInput(KernelCall& c) {
  if (c.outputs.size() != c.inputs.size()) return false;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    const at::Tensor& x = c.inputs[i];
    at::Tensor& o = c.Out(static_cast<int32_t>(i));
    if (o.numel() != x.dim()) return false;
    o.copy_(at::tensor(x.sizes().vec(), at::kLong).reshape(o.sizes()));
  }
  return true;
}

bool SizeOfInput(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.size() != 1 || c.Out(0).numel() != 1) return false;
  c.Out(0).fill_(c.inputs[0].numel());
  return true;
}

// Index arithmetic on shapes (BroadcastGradientArgs, ConcatOffset,
// DynamicStitch, ...): a few integers each, no data work. Zeros stand for
// their values, which no kernel here reads.
bool ShapeMetadata(KernelCall& c) {
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (c.op.outputs[i].bytes > 4096) return false;  // not metadata after all
    c.Out(static_cast<int32_t>(i)).zero_();
  }
  return true;
}

bool Range(KernelCall& c) {
  if (c.outputs.size() != 1) return false;
  at::Tensor& o = c.Out(0);
  o.copy_(at::arange(o.numel(), at::TensorOptions().dtype(at::kLong).device(c.device)).reshape(o.sizes()));
  return true;
}

// ---- data movement

// Reshape, ExpandDims, Squeeze, Identity, ...: the output is a view.
bool Alias(KernelCall& c) {
  if (c.outputs.size() != 1) return false;
  const Shape out = OutShape(c, 0);
  const at::ScalarType type = ScalarTypeOf(c.op.outputs[0].dtype);
  for (const at::Tensor& x : c.inputs) {
    if (x.defined() && x.numel() == Numel(out) && x.scalar_type() == type) {
      c.outputs[0] = x.reshape(out);
      return true;
    }
  }
  return false;
}

bool Concat(KernelCall& c) {
  if (c.outputs.size() != 1) return false;
  const Shape out = OutShape(c, 0);
  std::vector<at::Tensor> parts;
  const at::ScalarType type = ScalarTypeOf(c.op.outputs[0].dtype);
  for (const at::Tensor& x : c.inputs) {
    if (x.dim() == static_cast<int64_t>(out.size()) && !out.empty() && x.scalar_type() == type) parts.push_back(x);
  }
  for (size_t axis = 0; axis < out.size() && !parts.empty(); ++axis) {
    int64_t total = 0;
    bool fits = true;
    for (const at::Tensor& x : parts) {
      for (size_t d = 0; d < out.size() && fits; ++d) fits = d == axis || x.size(d) == out[d];
      total += x.size(axis);
    }
    if (fits && total == out[axis]) {
      at::cat_out(c.Out(0), parts, static_cast<int64_t>(axis));
      return true;
    }
  }
  // Paddings and offsets built from shapes (a Slice's gradient): integers.
  return !at::isFloatingType(ScalarTypeOf(c.op.outputs[0].dtype)) && ShapeMetadata(c);
}

bool Pack(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.empty()) return false;
  const Shape out = OutShape(c, 0);
  const Shape piece = c.inputs[0].sizes().vec();
  if (out.size() != piece.size() + 1) return false;
  for (const at::Tensor& x : c.inputs) {
    if (!Is(x, piece)) return false;
  }
  for (size_t axis = 0; axis < out.size(); ++axis) {
    Shape rest = out;
    rest.erase(rest.begin() + static_cast<int64_t>(axis));
    if (out[axis] == static_cast<int64_t>(c.inputs.size()) && rest == piece) {
      at::stack_out(c.Out(0), c.inputs, static_cast<int64_t>(axis));
      return true;
    }
  }
  return false;
}

bool Split(KernelCall& c) {
  if (c.inputs.empty() || c.outputs.empty()) return false;
  const at::Tensor& x = c.inputs[0];
  for (int64_t axis = 0; axis < x.dim(); ++axis) {
    int64_t total = 0;
    bool fits = true;
    for (size_t i = 0; i < c.outputs.size() && fits; ++i) {
      const Shape piece = OutShape(c, static_cast<int32_t>(i));
      fits = static_cast<int64_t>(piece.size()) == x.dim();
      for (int64_t d = 0; d < x.dim() && fits; ++d) fits = d == axis || piece[d] == x.size(d);
      if (fits) total += piece[axis];
    }
    if (!fits || total != x.size(axis)) continue;
    int64_t offset = 0;
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      at::Tensor& o = c.Out(static_cast<int32_t>(i));
      o.copy_(x.narrow(axis, offset, o.size(axis)));
      offset += o.size(axis);
    }
    return true;
  }
  return false;
}

bool Unpack(KernelCall& c) {
  if (c.inputs.empty() || c.outputs.empty()) return false;
  const at::Tensor& x = c.inputs[0];
  const Shape piece = OutShape(c, 0);
  for (int64_t axis = 0; axis < x.dim(); ++axis) {
    Shape rest = x.sizes().vec();
    rest.erase(rest.begin() + axis);
    if (x.size(axis) != static_cast<int64_t>(c.outputs.size()) || rest != piece) continue;
    for (size_t i = 0; i < c.outputs.size(); ++i)
      c.Out(static_cast<int32_t>(i)).copy_(x.select(axis, static_cast<int64_t>(i)));
    return true;
  }
  return false;
}

// A leading block of the input (the graph does not record the offsets).
// With fewer output dimensions (StridedSlice's shrink_axis_mask), the
// first index of the dropped ones, the later dimensions dropped first.
bool Slice(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.empty()) return false;
  const Shape out = OutShape(c, 0);
  const at::Tensor& x = c.inputs[0];
  const int64_t rank = x.dim(), kept = static_cast<int64_t>(out.size());
  if (kept > rank || rank > 16) return false;
  // Kept axes as a bit mask, most significant first: leading axes win.
  for (uint32_t mask = (1u << rank) - 1;; --mask) {
    if (std::popcount(mask) == kept) {
      bool fits = true;
      for (int64_t i = 0, j = 0; i < rank && fits; ++i) {
        if (mask & (1u << (rank - 1 - i))) fits = out[j++] <= x.size(i);
      }
      if (fits) {
        at::Tensor block = x;
        for (int64_t i = rank - 1, j = kept - 1; i >= 0; --i) {
          block = mask & (1u << (rank - 1 - i)) ? block.narrow(i, 0, out[j--]) : block.select(i, 0);
        }
        c.Out(0).copy_(block);
        return true;
      }
    }
    if (mask == 0) return false;
  }
}

bool Pad(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.empty()) return false;
  const Shape out = OutShape(c, 0);
  const at::Tensor& x = c.inputs[0];
  if (x.dim() != static_cast<int64_t>(out.size())) return false;
  at::Tensor& o = c.Out(0);
  at::Tensor block = o;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] < x.size(d)) return false;
    block = block.narrow(static_cast<int64_t>(d), 0, x.size(d));
  }
  o.zero_();
  block.copy_(x);
  return true;
}

// Repeats of the input. When the ranks differ (TensorFlow's Tile in a
// reduction's gradient follows a Reshape the graph does not keep), the
// input is repeated as rows: the same bytes read and written.
bool Tile(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.empty()) return false;
  const Shape out = OutShape(c, 0);
  const at::Tensor& x = c.inputs[0];
  if (x.numel() == 0 || Numel(out) % x.numel() != 0) return false;
  at::Tensor& o = c.Out(0);
  if (x.dim() == static_cast<int64_t>(out.size())) {
    Shape repeated, source;
    bool fits = true;
    for (size_t d = 0; d < out.size() && fits; ++d) {
      fits = out[d] % x.size(d) == 0;
      repeated.insert(repeated.end(), {fits ? out[d] / x.size(d) : 1, x.size(d)});
      source.insert(source.end(), {1, x.size(d)});
    }
    if (fits) {
      o.view(repeated).copy_(x.reshape(source).expand(repeated));
      return true;
    }
  }
  o.view({-1, x.numel()}).copy_(x.reshape({1, -1}).expand({Numel(out) / x.numel(), x.numel()}));
  return true;
}

// A permutation of the input's dimensions that gives the output's shape
// (the graph does not record it; among equal sizes, the first fitting).
bool Transpose(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.empty()) return false;
  const Shape out = OutShape(c, 0);
  const at::Tensor& x = c.inputs[0];
  if (x.dim() != static_cast<int64_t>(out.size())) return false;
  std::vector<int64_t> perm;
  std::vector<bool> used(out.size(), false);
  const bool reverse = out.size() == 2;  // a matrix transpose, the common case
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t found = -1;
    for (size_t k = 0; k < out.size() && found < 0; ++k) {
      const size_t e = reverse ? out.size() - 1 - k : k;
      if (!used[e] && x.size(static_cast<int64_t>(e)) == out[d]) found = static_cast<int64_t>(e);
    }
    if (found < 0) return false;
    used[found] = true;
    perm.push_back(found);
  }
  c.Out(0).copy_(x.permute(perm));
  return true;
}

// ---- embeddings

namespace {

// Row numbers from a seeded source may exceed the rows: folded in.
at::Tensor Rows(const at::Tensor& indices, int64_t rows) { return indices.reshape({-1}).to(at::kLong).remainder(rows); }

}  // namespace

// (params [V, ...], indices [...]) -> [..., ...]: rows of params.
bool Gather(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.size() < 2) return false;
  const at::Tensor& params = c.inputs[0];
  const at::Tensor& indices = c.inputs[1];
  if (params.dim() < 1 || at::isFloatingType(indices.scalar_type())) return false;
  Shape expected = indices.sizes().vec();
  expected.insert(expected.end(), params.sizes().begin() + 1, params.sizes().end());
  if (expected != OutShape(c, 0)) return false;
  Shape rows_shape{indices.numel()};
  rows_shape.insert(rows_shape.end(), params.sizes().begin() + 1, params.sizes().end());
  at::Tensor view = c.Out(0).view(rows_shape);
  at::index_select_out(view, params, 0, Rows(indices, params.size(0)));
  return true;
}

// (values [n, ...], indices [n]) -> [V, ...]: the sparse gradient of a
// Gather made dense, rows summed where indices repeat.
bool UnsortedSegmentSum(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.size() < 2) return false;
  const at::Tensor& values = c.inputs[0];
  const at::Tensor& indices = c.inputs[1];
  const Shape out = OutShape(c, 0);
  if (out.empty() || values.dim() < 1 || values.size(0) != indices.numel() ||
      values.numel() != indices.numel() * (Numel(out) / std::max<int64_t>(out[0], 1))) {
    return false;
  }
  at::Tensor& o = c.Out(0);
  o.zero_();
  o.view({out[0], -1}).index_add_(0, Rows(indices, out[0]), values.reshape({indices.numel(), -1}));
  return true;
}

// (ref [V, ...], indices [n], updates [n, ...]) -> ref, rows added in place.
bool ScatterAdd(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.size() != 3) return false;
  const at::Tensor& ref = c.inputs[0];
  const at::Tensor& indices = c.inputs[1];
  const at::Tensor& updates = c.inputs[2];
  if (ref.dim() < 1 || !Is(ref, OutShape(c, 0)) || updates.numel() != indices.numel() * (ref.numel() / ref.size(0))) {
    return false;
  }
  ref.view({ref.size(0), -1}).index_add_(0, Rows(indices, ref.size(0)), updates.reshape({indices.numel(), -1}));
  c.outputs[0] = ref;
  return true;
}

// (value) -> a reference to the slot it was written into.
// (value) -> a reference to the slot it was written into (or nothing:
// Transformer-XL's memory update).
bool Assign(KernelCall& c) {
  if (c.outputs.size() > 1 || c.inputs.size() != 1) return false;
  const Shape shape = c.outputs.empty() ? c.inputs[0].sizes().vec() : OutShape(c, 0);
  if (c.inputs[0].numel() != Numel(shape)) return false;
  at::Tensor slot = StateTensor(c, 0, shape);
  slot.copy_(c.inputs[0].reshape(shape));
  if (!c.outputs.empty()) c.outputs[0] = slot;
  return true;
}

// ([ref,] delta): the last input is subtracted from the op's own copy of
// the variable (a batch norm's moving mean, Adam's step), not from the
// variable op's tensor, which another device may be copying meanwhile.
bool AssignSub(KernelCall& c) {
  if (!c.outputs.empty() || c.inputs.empty() || c.inputs.size() > 2) return false;
  const at::Tensor& delta = c.inputs.back();
  if (c.inputs.size() == 2 && c.inputs[0].numel() != delta.numel()) return false;
  StateTensor(c, 0, delta.sizes().vec()).sub_(delta);
  return true;
}

// (indices [...]) -> [..., depth]: ones at each index, folded into depth.
bool OneHot(KernelCall& c) {
  if (c.outputs.size() != 1 || c.inputs.empty() || at::isFloatingType(c.inputs[0].scalar_type())) return false;
  const Shape out = OutShape(c, 0);
  if (out.empty() || out.back() < 1) return false;
  // WaveNet one-hot encodes its targets, fewer than its inputs: the first.
  const int64_t rows = Numel(out) / out.back();
  if (c.inputs[0].numel() < rows) return false;
  const at::Tensor indices = c.inputs[0].reshape({-1}).narrow(0, 0, rows);
  at::Tensor& o = c.Out(0);
  o.zero_();
  o.view({rows, out.back()}).scatter_(1, Rows(indices, out.back()).unsqueeze(1), 1.0);
  return true;
}

// ---- optimizer updates

namespace {

// The gradient and the variable's shape: the float inputs of the most
// elements. TensorFlow's updates read one gradient; ONNX import's read the
// weight first, then one gradient per consumer, which are summed.
bool Gradient(const KernelCall& c, at::Tensor* gradient) {
  std::vector<at::Tensor> largest;
  for (const at::Tensor& t : FloatInputs(c)) {
    if (largest.empty() || t.numel() > largest[0].numel())
      largest = {t};
    else if (t.numel() == largest[0].numel())
      largest.push_back(t);
  }
  if (largest.empty()) return false;
  const size_t first = largest.size() >= 2 ? 1 : 0;
  *gradient = largest[first];
  for (size_t i = first + 1; i < largest.size(); ++i) *gradient = *gradient + largest[i].reshape(gradient->sizes());
  return true;
}

// Slot i of the update (i >= 1), zero at the start: moments, accumulators.
// Returned by value (a handle to the same memory): a later slot may grow
// the state vector under a reference.
at::Tensor Slot(KernelCall& c, size_t i, const at::Tensor& like) {
  std::vector<at::Tensor>& state = c.state.tensors;
  if (state.size() <= i) state.resize(i + 1);
  if (!state[i].defined() || !Is(state[i], like.sizes().vec())) state[i] = at::zeros_like(like);
  return state[i];
}

constexpr double kLearningRate = 1e-3;

// What an update hands on, if the graph gives it outputs (the synthetic
// graphs give it a scalar): zeros, no work to speak of.
void ZeroOutputs(KernelCall& c) {
  for (size_t i = 0; i < c.outputs.size(); ++i) c.Out(static_cast<int32_t>(i)).zero_();
}

}  // namespace

bool ApplyAdam(KernelCall& c) {
  at::Tensor g;
  if (!Gradient(c, &g)) return false;
  ZeroOutputs(c);
  at::Tensor var = StateTensor(c, 0, g.sizes().vec());
  at::Tensor m = Slot(c, 1, g);
  at::Tensor v = Slot(c, 2, g);
  m.mul_(0.9).add_(g, 0.1);
  v.mul_(0.999).addcmul_(g, g, 0.001);
  var.addcdiv_(m, v.sqrt().add_(1e-8), -kLearningRate);
  return true;
}

bool ApplyRmsProp(KernelCall& c) {
  at::Tensor g;
  if (!Gradient(c, &g)) return false;
  ZeroOutputs(c);
  at::Tensor var = StateTensor(c, 0, g.sizes().vec());
  at::Tensor ms = Slot(c, 1, g);
  at::Tensor mom = Slot(c, 2, g);
  ms.mul_(0.9).addcmul_(g, g, 0.1);
  mom.mul_(0.9).addcdiv_(g, ms.sqrt().add_(1e-10), kLearningRate);
  var.sub_(mom);
  return true;
}

bool ApplyMomentum(KernelCall& c) {
  at::Tensor g;
  if (!Gradient(c, &g)) return false;
  ZeroOutputs(c);
  at::Tensor var = StateTensor(c, 0, g.sizes().vec());
  at::Tensor accumulator = Slot(c, 1, g);
  accumulator.mul_(0.9).add_(g);
  var.add_(accumulator, -kLearningRate);
  return true;
}

bool ApplyGradientDescent(KernelCall& c) {
  at::Tensor g;
  if (!Gradient(c, &g)) return false;
  ZeroOutputs(c);
  StateTensor(c, 0, g.sizes().vec()).add_(g, -kLearningRate);
  return true;
}

}  // namespace devplace::kernels
