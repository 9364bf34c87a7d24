#include "import/onnx_fold.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace devplace {
namespace {

// Folded values stay small: shapes and indices, not data.
constexpr size_t kMaxElements = 4096;

struct IntTensor {
  std::vector<int64_t> dims;
  std::vector<int64_t> values;
  int32_t elem_type = onnx::TensorProto::INT64;
};

bool IsIntType(int32_t t) { return t == onnx::TensorProto::INT64 || t == onnx::TensorProto::INT32; }

// Whether `v` is a value of elem_type: an int32 result out of range would
// wrap at run time, which a shape must not silently do here.
bool Fits(int64_t v, int32_t elem_type) {
  return elem_type != onnx::TensorProto::INT32 ||
         (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max());
}

// The element count of `dims`, or nullopt when negative or past kMaxElements.
std::optional<size_t> SmallCount(const std::vector<int64_t>& dims);

std::optional<IntTensor> FromProto(const onnx::TensorProto& t) {
  if (!IsIntType(t.data_type()) || t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  IntTensor out;
  out.elem_type = t.data_type();
  out.dims.assign(t.dims().begin(), t.dims().end());
  const std::optional<size_t> count = SmallCount(out.dims);
  if (!count) return std::nullopt;
  const int64_t n = static_cast<int64_t>(*count);
  if (t.has_raw_data()) {
    const size_t width = t.data_type() == onnx::TensorProto::INT64 ? 8 : 4;
    if (t.raw_data().size() != static_cast<size_t>(n) * width) return std::nullopt;
    for (int64_t i = 0; i < n; ++i) {
      if (width == 8) {
        int64_t v;
        std::memcpy(&v, t.raw_data().data() + i * 8, 8);
        out.values.push_back(v);
      } else {
        int32_t v;
        std::memcpy(&v, t.raw_data().data() + i * 4, 4);
        out.values.push_back(v);
      }
    }
  } else if (t.data_type() == onnx::TensorProto::INT64) {
    out.values.assign(t.int64_data().begin(), t.int64_data().end());
  } else {
    out.values.assign(t.int32_data().begin(), t.int32_data().end());
  }
  if (out.values.size() != static_cast<size_t>(n)) return std::nullopt;
  return out;
}

onnx::TensorProto ToProto(const std::string& name, const IntTensor& t) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(t.elem_type);
  for (int64_t d : t.dims) proto.add_dims(d);
  for (int64_t v : t.values) {
    if (t.elem_type == onnx::TensorProto::INT64) {
      proto.add_int64_data(v);
    } else {
      proto.add_int32_data(static_cast<int32_t>(v));
    }
  }
  return proto;
}

const onnx::AttributeProto* Attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::optional<size_t> SmallCount(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
  }
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(n, d, &n) || n > static_cast<int64_t>(kMaxElements)) return std::nullopt;
  }
  return static_cast<size_t>(n);
}

IntTensor Vector(std::vector<int64_t> values) {
  IntTensor t;
  t.dims = {static_cast<int64_t>(values.size())};
  t.values = std::move(values);
  return t;
}

int64_t Wrap(int64_t index, int64_t size) { return index < 0 ? index + size : index; }

// Row-major strides of `dims` (counts already bounded by kMaxElements).
std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// The next multi-index of `dims` in row-major order (wraps to zeros).
void Advance(std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  for (size_t i = index.size(); i-- > 0;) {
    if (++index[i] < dims[i]) return;
    index[i] = 0;
  }
}

// One element of integer arithmetic as ONNX defines it, or nullopt where
// the result is undefined or overflows (INT64_MIN / -1, division by zero):
// such a node is left for the runtime rather than folded to a wrong value.
std::optional<int64_t> Apply(const std::string& op, int64_t x, int64_t y, bool fmod) {
  int64_t r = 0;
  if (op == "Add") return __builtin_add_overflow(x, y, &r) ? std::nullopt : std::optional<int64_t>(r);
  if (op == "Sub") return __builtin_sub_overflow(x, y, &r) ? std::nullopt : std::optional<int64_t>(r);
  if (op == "Mul") return __builtin_mul_overflow(x, y, &r) ? std::nullopt : std::optional<int64_t>(r);
  if (op == "Max") return std::max(x, y);
  if (op == "Min") return std::min(x, y);
  if (op == "Equal") return x == y;
  if (y == 0) return std::nullopt;
  if (y == -1) {
    // x / -1 and x % -1 trap for INT64_MIN; the remainder is always 0.
    if (op == "Mod") return 0;
    if (op == "Div") return x == std::numeric_limits<int64_t>::min() ? std::nullopt : std::optional<int64_t>(-x);
  }
  if (op == "Div") return x / y;  // integer Div truncates, as ONNX runtimes do
  if (op == "Mod") {
    // fmod=0 (the default) takes the divisor's sign, as Python's %.
    r = x % y;
    if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
  }
  return std::nullopt;
}

// Element-wise arithmetic where one side may be a single element.
std::optional<IntTensor> Arithmetic(const std::string& op, const IntTensor& a, const IntTensor& b, bool fmod) {
  if (a.values.empty() || b.values.empty() || a.elem_type != b.elem_type) return std::nullopt;
  if (a.values.size() != b.values.size() && a.values.size() != 1 && b.values.size() != 1) return std::nullopt;
  // The result takes the broadcast shape: the larger side, or the higher rank.
  const bool a_shape = a.values.size() != b.values.size() ? a.values.size() > b.values.size()
                                                          : a.dims.size() >= b.dims.size();
  IntTensor out = a_shape ? a : b;
  out.elem_type = a.elem_type;
  for (size_t i = 0; i < out.values.size(); ++i) {
    const int64_t x = a.values[a.values.size() == 1 ? 0 : i];
    const int64_t y = b.values[b.values.size() == 1 ? 0 : i];
    const std::optional<int64_t> r = Apply(op, x, y, fmod);
    if (!r || !Fits(*r, a.elem_type)) return std::nullopt;
    out.values[i] = *r;
  }
  if (op == "Equal") out.elem_type = onnx::TensorProto::BOOL;
  return out;
}

// One function per op that Evaluate folds, each returning nullopt where it
// does not fold (an input it cannot take, a result that is not a small
// integer tensor). `a` and `b` are the node's inputs 0 and 1 (b: nullptr
// when absent).

// Constant: its value, value_ints or value_int attribute.
std::optional<IntTensor> FoldConstant(const onnx::NodeProto& node) {
  if (const auto* a = Attribute(node, "value")) return FromProto(a->t());
  if (const auto* a = Attribute(node, "value_ints")) return Vector({a->ints().begin(), a->ints().end()});
  if (const auto* a = Attribute(node, "value_int")) {
    IntTensor t;
    t.values = {a->i()};
    return t;
  }
  return std::nullopt;
}

// torch.onnx's expand(n, -1, -1): Where(Equal(shape, -1),
// ConstantOfShape(Shape(shape)), shape) gives Expand its shape.
std::optional<IntTensor> FoldConstantOfShape(const onnx::NodeProto& node, const IntTensor* shape) {
  if (!shape || shape->dims.size() != 1) return std::nullopt;
  IntTensor t;
  t.values = {0};
  if (const auto* a = Attribute(node, "value")) {
    std::optional<IntTensor> value = FromProto(a->t());
    if (!value || value->values.size() != 1) return std::nullopt;
    t = *value;
  } else {
    return std::nullopt;  // float zeros by default: not a shape
  }
  t.dims = shape->values;
  const std::optional<size_t> count = SmallCount(t.dims);
  if (!count) return std::nullopt;
  t.values.assign(*count, t.values[0]);
  return t;
}

// Size: the element count of a known shape.
std::optional<IntTensor> FoldSize(const std::vector<int64_t>& dims) {
  IntTensor t;
  t.values = {1};
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(t.values[0], d, &t.values[0])) return std::nullopt;
  }
  return t;
}

// Shape: a known shape's dims, between the start and end attributes.
std::optional<IntTensor> FoldShape(const onnx::NodeProto& node, const std::vector<int64_t>& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t start = 0, end = rank;
  if (const auto* a = Attribute(node, "start")) start = std::clamp(Wrap(a->i(), rank), int64_t{0}, rank);
  if (const auto* a = Attribute(node, "end")) end = std::clamp(Wrap(a->i(), rank), int64_t{0}, rank);
  return Vector({dims.begin() + start, dims.begin() + std::max(start, end)});
}

// To any shape of the same count: at most one -1 (the rest of the count),
// 0 copies the input's dim (allowzero = 0, the default).
std::optional<IntTensor> FoldReshape(const onnx::NodeProto& node, const IntTensor& a, const IntTensor* b) {
  if (!b || b->dims.size() != 1) return std::nullopt;
  if (const auto* allowzero = Attribute(node, "allowzero"); allowzero && allowzero->i() != 0) return std::nullopt;
  const int64_t count = static_cast<int64_t>(a.values.size());
  std::vector<int64_t> dims = b->values;
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0) {
      if (i >= a.dims.size()) return std::nullopt;
      dims[i] = a.dims[i];
    }
    if (dims[i] == -1) {
      if (inferred >= 0) return std::nullopt;
      inferred = static_cast<int>(i);
      continue;
    }
    if (dims[i] < 0 || __builtin_mul_overflow(known, dims[i], &known)) return std::nullopt;
  }
  if (inferred >= 0) {
    if (known == 0 || count % known != 0) return std::nullopt;
    dims[inferred] = count / known;
  } else if (known != count) {
    return std::nullopt;
  }
  IntTensor t = a;
  t.dims = std::move(dims);
  return t;
}

// torch.onnx's padding arithmetic transposes a [-1, 2] table. An empty
// tensor is left alone: one of its dims may be huge.
std::optional<IntTensor> FoldTranspose(const onnx::NodeProto& node, const IntTensor& a) {
  if (a.values.empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(a.dims.size());
  std::vector<int64_t> perm;
  if (const auto* attr = Attribute(node, "perm")) perm.assign(attr->ints().begin(), attr->ints().end());
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank) return std::nullopt;
  std::vector<bool> seen(rank, false);
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= rank || seen[axis]) return std::nullopt;
    seen[axis] = true;
  }
  IntTensor t = a;
  for (int64_t i = 0; i < rank; ++i) t.dims[i] = a.dims[perm[i]];
  const std::vector<int64_t> in_strides = Strides(a.dims);
  std::vector<int64_t> index(rank, 0);
  for (size_t k = 0; k < t.values.size(); ++k) {
    int64_t from = 0;
    for (int64_t i = 0; i < rank; ++i) from += index[i] * in_strides[perm[i]];
    t.values[k] = a.values[from];
    Advance(index, t.dims);
  }
  return t;
}

// Element-wise, equal sizes or one side a single element.
std::optional<IntTensor> FoldEqual(const IntTensor& a, const IntTensor* b) {
  if (!b || a.elem_type != b->elem_type || a.dims.size() > 1 || b->dims.size() > 1) return std::nullopt;
  const size_t n = std::max(a.values.size(), b->values.size());
  if ((a.values.size() != n && a.values.size() != 1) || (b->values.size() != n && b->values.size() != 1)) return std::nullopt;
  IntTensor t = a.values.size() == n ? a : *b;
  t.elem_type = onnx::TensorProto::BOOL;
  for (size_t i = 0; i < n; ++i) t.values[i] = a.values[a.values.size() == 1 ? 0 : i] == b->values[b->values.size() == 1 ? 0 : i];
  return t;
}

// Where(condition, x, y) on vectors of one length.
std::optional<IntTensor> FoldWhere(const IntTensor& condition, const IntTensor* x, const IntTensor* y) {
  if (condition.elem_type != onnx::TensorProto::BOOL || !x || !y || x->elem_type != y->elem_type) return std::nullopt;
  if (condition.dims.size() != 1 || condition.dims != x->dims || condition.dims != y->dims) return std::nullopt;
  IntTensor t = *x;
  for (size_t i = 0; i < t.values.size(); ++i) t.values[i] = condition.values[i] ? x->values[i] : y->values[i];
  return t;
}

// Between the integer types only.
std::optional<IntTensor> FoldCast(const onnx::NodeProto& node, const IntTensor& a) {
  const auto* to = Attribute(node, "to");
  if (!to || !IsIntType(static_cast<int32_t>(to->i()))) return std::nullopt;
  IntTensor t = a;
  t.elem_type = static_cast<int32_t>(to->i());
  // To int32, values wrap as the runtime's static_cast does.
  if (t.elem_type == onnx::TensorProto::INT32) {
    for (int64_t& v : t.values) v = static_cast<int32_t>(v);
  }
  return t;
}

// Add, Sub, Mul, Div, Mod, Max, Min on scalars and vectors.
std::optional<IntTensor> FoldArithmetic(const onnx::NodeProto& node, const IntTensor& a, const IntTensor* b) {
  if (!b || a.dims.size() > 1 || b->dims.size() > 1) return std::nullopt;
  const auto* fmod = Attribute(node, "fmod");
  return Arithmetic(node.op_type(), a, *b, fmod && fmod->i() != 0);
}

// Only a scalar to a vector of one and back, which is what shape arithmetic
// makes; the axes (an attribute, or input 1 from opset 13) must name that
// one axis.
std::optional<IntTensor> FoldSqueeze(const onnx::NodeProto& node, const IntTensor& a, const IntTensor* b) {
  const std::string& op = node.op_type();
  std::vector<int64_t> axes = {0};
  if (const auto* attr = Attribute(node, "axes")) axes.assign(attr->ints().begin(), attr->ints().end());
  if (b) axes = b->values;
  if (axes.size() != 1 || (axes[0] != 0 && axes[0] != -1)) return std::nullopt;
  IntTensor t = a;
  if (op == "Unsqueeze" && a.dims.empty()) t.dims = {1};
  else if (op == "Squeeze" && a.dims.size() == 1 && a.dims[0] == 1) t.dims = {};
  else return std::nullopt;
  return t;
}

// Gather along axis 0 of a vector.
std::optional<IntTensor> FoldGather(const onnx::NodeProto& node, const IntTensor& a, const IntTensor* b) {
  const auto* axis = Attribute(node, "axis");
  if (!b || a.dims.size() != 1 || (axis && axis->i() != 0)) return std::nullopt;
  IntTensor t = *b;
  t.elem_type = a.elem_type;
  const int64_t size = static_cast<int64_t>(a.values.size());
  for (int64_t& v : t.values) {
    const int64_t i = Wrap(v, size);
    if (i < 0 || i >= size) return std::nullopt;
    v = a.values[i];
  }
  return t;
}

// The input indices a Slice takes along one axis of `dim` elements, in
// order. ONNX's clamping: into [0, dim] going up, [-1, dim - 1] going down.
// Bounds are far from int64's limits once clamped to a small dim.
std::vector<int64_t> SliceAxisPicks(int64_t dim, int64_t start_arg, int64_t end_arg, int64_t step) {
  std::vector<int64_t> picks;
  if (dim == 0) return picks;  // nothing to take (and [0, dim - 1] is no range)
  auto resolve = [dim](int64_t v, int64_t low, int64_t high) { return std::clamp(v < 0 ? v + dim : v, low, high); };
  int64_t start, end;
  if (step > 0) {
    start = resolve(start_arg, 0, dim);
    end = resolve(end_arg, 0, dim);
  } else {
    start = resolve(start_arg, 0, dim - 1);
    end = resolve(end_arg, -1, dim - 1);
  }
  for (int64_t i = start; step > 0 ? i < end : i > end;) {
    picks.push_back(i);
    if (__builtin_add_overflow(i, step, &i)) break;  // a step of 2^62 takes one element
  }
  return picks;
}

// Per axis of `dims`, the input indices a Slice takes, in order (every
// index on an axis it does not name); nullopt for an axis out of range or
// named twice, or a step of 0. `axes` and `steps`, when given, are as long
// as `starts` and `ends`.
std::optional<std::vector<std::vector<int64_t>>> SlicePicks(const std::vector<int64_t>& dims,
                                                            const std::vector<int64_t>& starts,
                                                            const std::vector<int64_t>& ends,
                                                            const std::optional<std::vector<int64_t>>& axes,
                                                            const std::optional<std::vector<int64_t>>& steps) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<std::vector<int64_t>> picks(rank);
  for (int64_t axis = 0; axis < rank; ++axis) {
    for (int64_t i = 0; i < dims[axis]; ++i) picks[axis].push_back(i);
  }
  std::vector<bool> sliced(rank, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t axis = axes ? (*axes)[k] : static_cast<int64_t>(k);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || sliced[axis]) return std::nullopt;
    sliced[axis] = true;
    const int64_t step = steps ? (*steps)[k] : 1;
    if (step == 0) return std::nullopt;
    picks[axis] = SliceAxisPicks(dims[axis], starts[k], ends[k], step);
  }
  return picks;
}

// The elements of `a` at every combination of `picks` (one list per axis),
// or nullopt when that is not a small count.
std::optional<IntTensor> TakePicks(const IntTensor& a, const std::vector<std::vector<int64_t>>& picks) {
  const int64_t rank = static_cast<int64_t>(a.dims.size());
  IntTensor t;
  t.elem_type = a.elem_type;
  for (int64_t axis = 0; axis < rank; ++axis) t.dims.push_back(static_cast<int64_t>(picks[axis].size()));
  const std::optional<size_t> count = SmallCount(t.dims);
  if (!count) return std::nullopt;
  const std::vector<int64_t> in_strides = Strides(a.dims);
  std::vector<int64_t> index(rank, 0);
  for (size_t k = 0; k < *count; ++k) {
    int64_t from = 0;
    for (int64_t axis = 0; axis < rank; ++axis) from += picks[axis][index[axis]] * in_strides[axis];
    t.values.push_back(a.values[from]);
    Advance(index, t.dims);
  }
  return t;
}

// Range(start, limit, delta), stepped with checked adds and at most
// kMaxElements steps, so a huge range is left unfolded instead of filling
// memory.
std::optional<IntTensor> FoldRange(const IntTensor& start_in, const IntTensor* limit_in, const IntTensor* delta) {
  if (!limit_in || !delta || start_in.values.size() != 1 || limit_in->values.size() != 1 || delta->values.size() != 1) {
    return std::nullopt;
  }
  const int64_t start = start_in.values[0], limit = limit_in->values[0], step = delta->values[0];
  if (step == 0) return std::nullopt;
  std::vector<int64_t> values;
  for (int64_t v = start; step > 0 ? v < limit : v > limit;) {
    if (values.size() >= kMaxElements) return std::nullopt;
    values.push_back(v);
    if (__builtin_add_overflow(v, step, &v)) break;
  }
  IntTensor t = Vector(std::move(values));
  t.elem_type = start_in.elem_type;
  return t;
}

class Folder {
 public:
  explicit Folder(onnx::GraphProto& graph) : graph_(graph) {
    for (const auto& t : graph.initializer()) {
      if (auto v = FromProto(t)) values_[t.name()] = *v;
    }
    auto add_shape = [this](const onnx::ValueInfoProto& v) {
      if (std::optional<std::vector<int64_t>> dims = KnownDims(v)) shapes_[v.name()] = *dims;
    };
    for (const auto& v : graph.input()) add_shape(v);
    for (const auto& v : graph.value_info()) add_shape(v);
    for (const auto& v : graph.output()) add_shape(v);
  }

  int Run() {
    std::vector<bool> folded(graph_.node_size(), false);
    int count = 0;
    for (int n = 0; n < graph_.node_size(); ++n) {
      const auto& node = graph_.node(n);
      if (!node.domain().empty() && node.domain() != "ai.onnx") continue;
      if (node.output_size() != 1 || node.output(0).empty()) continue;
      std::optional<IntTensor> result = Evaluate(node);
      if (!result || result->values.size() > kMaxElements) continue;
      if (SmallCount(result->dims) != result->values.size()) continue;
      if (result->elem_type == onnx::TensorProto::BOOL) {
        // A condition (Equal) is kept for the Where that reads it in this
        // pass, not folded: a shape is never a bool tensor.
        values_[node.output(0)] = *result;
        continue;
      }
      if (!std::all_of(result->values.begin(), result->values.end(),
                       [&](int64_t v) { return Fits(v, result->elem_type); })) {
        continue;
      }
      values_[node.output(0)] = *result;
      folded[n] = true;
      ++count;
    }
    if (count == 0) return 0;
    // Folded nodes leave; their outputs become initializers.
    std::vector<onnx::NodeProto> kept;
    for (int n = 0; n < graph_.node_size(); ++n) {
      if (!folded[n]) {
        kept.push_back(graph_.node(n));
      } else {
        *graph_.add_initializer() = ToProto(graph_.node(n).output(0), values_.at(graph_.node(n).output(0)));
      }
    }
    graph_.clear_node();
    for (auto& node : kept) *graph_.add_node() = std::move(node);
    return count;
  }

 private:
  const IntTensor* Value(const onnx::NodeProto& node, int i) const {
    if (i >= node.input_size() || node.input(i).empty()) return nullptr;
    auto it = values_.find(node.input(i));
    return it == values_.end() ? nullptr : &it->second;
  }

  // What `node` computes when it is a small integer computation whose
  // inputs are known: folded values, or shapes for Shape and Size.
  std::optional<IntTensor> Evaluate(const onnx::NodeProto& node) const {
    const std::string& op = node.op_type();
    if (op == "Constant") return FoldConstant(node);
    if (op == "ConstantOfShape") return FoldConstantOfShape(node, Value(node, 0));
    if (op == "Shape" || op == "Size") {
      if (node.input_size() < 1) return std::nullopt;
      auto it = shapes_.find(node.input(0));
      if (it == shapes_.end()) return std::nullopt;
      return op == "Size" ? FoldSize(it->second) : FoldShape(node, it->second);
    }
    // The rest read only folded values.
    for (int i = 0; i < node.input_size(); ++i) {
      if (!node.input(i).empty() && !Value(node, i)) return std::nullopt;
    }
    const IntTensor* a = Value(node, 0);
    const IntTensor* b = Value(node, 1);
    if (!a) return std::nullopt;
    if (op == "Identity") return *a;
    if (op == "Reshape") return FoldReshape(node, *a, b);
    if (op == "Transpose") return FoldTranspose(node, *a);
    if (op == "Equal") return FoldEqual(*a, b);
    if (op == "Where") return FoldWhere(*a, b, Value(node, 2));
    if (op == "Cast") return FoldCast(node, *a);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" || op == "Max" || op == "Min") {
      return FoldArithmetic(node, *a, b);
    }
    if (op == "Unsqueeze" || op == "Squeeze") return FoldSqueeze(node, *a, b);
    if (op == "Concat") return FoldConcat(node, a->elem_type);
    if (op == "Gather") return FoldGather(node, *a, b);
    if (op == "Slice") return FoldSlice(node, *a);
    if (op == "Range") return FoldRange(*a, b, Value(node, 2));
    return std::nullopt;
  }

  // Every input joined, all vectors of one type.
  std::optional<IntTensor> FoldConcat(const onnx::NodeProto& node, int32_t elem_type) const {
    IntTensor t;
    t.elem_type = elem_type;
    for (int i = 0; i < node.input_size(); ++i) {
      const IntTensor* part = Value(node, i);
      if (!part || part->dims.size() != 1 || part->elem_type != t.elem_type) return std::nullopt;
      if (t.values.size() + part->values.size() > kMaxElements) return std::nullopt;
      t.values.insert(t.values.end(), part->values.begin(), part->values.end());
    }
    t.dims = {static_cast<int64_t>(t.values.size())};
    return t;
  }

  // A Slice's starts, ends, axes or steps: input `input` (opset 10 on), or
  // before opset 10 the attribute (torch's opset 9 export of out[:, -1]).
  std::optional<std::vector<int64_t>> SliceArgument(const onnx::NodeProto& node, int input,
                                                    const char* attribute) const {
    if (const IntTensor* v = Value(node, input)) return v->values;
    if (const auto* attr = Attribute(node, attribute)) return std::vector<int64_t>(attr->ints().begin(), attr->ints().end());
    return std::nullopt;
  }

  // Any rank, axes and steps: torch.onnx flips with steps of -1 (padding
  // amounts, reversed dims).
  std::optional<IntTensor> FoldSlice(const onnx::NodeProto& node, const IntTensor& a) const {
    const std::optional<std::vector<int64_t>> starts = SliceArgument(node, 1, "starts"),
                                              ends = SliceArgument(node, 2, "ends"),
                                              axes = SliceArgument(node, 3, "axes"),
                                              steps = SliceArgument(node, 4, "steps");
    if (!starts || !ends || starts->size() != ends->size() || a.values.empty()) return std::nullopt;
    const size_t n = starts->size();
    if ((axes && axes->size() != n) || (steps && steps->size() != n)) return std::nullopt;
    const std::optional<std::vector<std::vector<int64_t>>> picks = SlicePicks(a.dims, *starts, *ends, axes, steps);
    if (!picks) return std::nullopt;
    return TakePicks(a, *picks);
  }

  onnx::GraphProto& graph_;
  std::unordered_map<std::string, IntTensor> values_;
  std::unordered_map<std::string, std::vector<int64_t>> shapes_;
};

}  // namespace

int FoldShapeComputations(onnx::GraphProto& graph) { return Folder(graph).Run(); }

std::optional<std::vector<int64_t>> OnnxIntValues(const onnx::TensorProto& tensor) {
  std::optional<IntTensor> t = FromProto(tensor);
  if (!t) return std::nullopt;
  return std::move(t->values);
}

std::optional<std::vector<int64_t>> KnownDims(const onnx::ValueInfoProto& v) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return dims;
}

GraphShapes::GraphShapes(onnx::GraphProto& graph) {
  auto add = [this](const onnx::ValueInfoProto& v) {
    if (std::optional<std::vector<int64_t>> dims = KnownDims(v)) known_[v.name()] = std::move(*dims);
  };
  for (const auto& v : graph.input()) add(v);
  for (auto& v : *graph.mutable_value_info()) {
    add(v);
    entry_[v.name()] = &v;
  }
  for (auto& v : *graph.mutable_output()) {
    add(v);
    entry_.emplace(v.name(), &v);
  }
  for (const auto& t : graph.initializer()) known_.emplace(t.name(), std::vector<int64_t>(t.dims().begin(), t.dims().end()));
}

const std::vector<int64_t>* GraphShapes::Find(const std::string& name) const {
  auto it = known_.find(name);
  return it == known_.end() ? nullptr : &it->second;
}

bool GraphShapes::Complete(const std::string& name, const std::vector<int64_t>& dims) {
  auto it = entry_.find(name);
  if (it == entry_.end() || !it->second->type().has_tensor_type()) return false;
  auto* tensor = it->second->mutable_type()->mutable_tensor_type();
  if (tensor->has_shape() && tensor->shape().dim_size() != static_cast<int>(dims.size())) return false;
  auto* shape = tensor->mutable_shape();
  shape->clear_dim();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  known_[name] = dims;
  return true;
}

}  // namespace devplace
