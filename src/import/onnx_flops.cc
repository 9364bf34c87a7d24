#include "import/onnx_flops.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "import/onnx_einsum.h"
#include "import/onnx_validate.h"

namespace devplace {
namespace {

// In double: FLOPs are doubles, and attribute products (kernel_shape) are
// not bounded the way tensor sizes are.
double Product(const std::vector<int64_t>& dims, size_t from = 0) {
  double p = 1;
  for (size_t i = from; i < dims.size(); ++i) p *= static_cast<double>(std::max<int64_t>(dims[i], 0));
  return p;
}

int64_t Elements(const OnnxTensorInfo* t) { return t ? t->elements() : 0; }

// Per-element cost of element-wise ops; transcendental functions count as
// a few FLOPs, as profilers usually do.
const std::map<std::string, double>& ElementwiseCosts() {
  static const std::map<std::string, double> costs = {
      {"Add", 1},       {"Sub", 1},        {"Mul", 1},      {"Div", 1},         {"Relu", 1},       {"LeakyRelu", 2},
      {"PRelu", 2},     {"Elu", 3},        {"Selu", 3},     {"Sigmoid", 4},     {"HardSigmoid", 3}, {"HardSwish", 4},
      {"Tanh", 4},      {"Exp", 4},        {"Log", 4},      {"Sqrt", 2},        {"Reciprocal", 1}, {"Pow", 4},
      {"Erf", 4},       {"Gelu", 8},       {"Neg", 1},      {"Abs", 1},         {"Clip", 2},       {"Min", 1},
      {"Max", 1},       {"Sum", 1},        {"Mean", 2},     {"Where", 1},       {"Equal", 1},      {"Less", 1},
      {"Greater", 1},   {"LessOrEqual", 1}, {"GreaterOrEqual", 1}, {"Not", 1},   {"And", 1},        {"Or", 1},
      {"Xor", 1},       {"Floor", 1},      {"Ceil", 1},     {"Round", 1},       {"Sign", 1},       {"Softplus", 4},
      {"Softsign", 3},  {"Sin", 4},        {"Cos", 4},      {"Mish", 8},        {"IsNaN", 1},      {"Mod", 1},
      {"ThresholdedRelu", 1}, {"Celu", 3}, {"BitShift", 1}};
  return costs;
}

// Element-wise ops whose operands broadcast as numpy's do (PRelu's slope
// only one way, which this check, both ways, lets pass when wrong).
const std::set<std::string>& BroadcastingOps() {
  static const std::set<std::string> ops = {"Add",   "Sub",     "Mul",  "Div",       "Pow",         "Mod",
                                            "Equal", "Less",    "Greater", "LessOrEqual", "GreaterOrEqual",
                                            "And",   "Or",      "Xor",  "BitShift",  "Where",       "Max",
                                            "Min",   "Sum",     "Mean", "PRelu"};
  return ops;
}

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return text + "]";
}

// Right-aligned, each pair of dims must be equal or one of them 1; an
// unknown dim fits anything. libonnx's inference lets a mismatch pass
// (with error_mode 0) and the op was costed from one side.
std::string BroadcastMismatch(const std::vector<const OnnxTensorInfo*>& in) {
  std::vector<int64_t> shape;  // the broadcast so far
  bool any = false;
  for (const OnnxTensorInfo* x : in) {
    if (!x || !x->has_shape) continue;
    if (!any) {
      any = true;
      shape = x->dims;
      continue;
    }
    const std::vector<int64_t>& dims = x->dims;
    std::vector<int64_t> merged(std::max(shape.size(), dims.size()), 1);
    for (size_t k = 0; k < merged.size(); ++k) {
      const int64_t a = k < shape.size() ? shape[shape.size() - 1 - k] : 1;
      const int64_t b = k < dims.size() ? dims[dims.size() - 1 - k] : 1;
      int64_t& m = merged[merged.size() - 1 - k];
      if (a == b || b == 1) {
        m = a;
      } else if (a == 1) {
        m = b;
      } else if (a < 0 || b < 0) {
        m = a < 0 ? b : a;
      } else {
        std::string shapes;
        for (const OnnxTensorInfo* y : in) {
          if (y && y->has_shape) shapes += (shapes.empty() ? "" : " and ") + ShapeText(y->dims);
        }
        return "its operands' shapes " + shapes + " do not broadcast";
      }
    }
    shape = std::move(merged);
  }
  return "";
}

}  // namespace

std::vector<int64_t> OnnxIntsAttribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

int64_t OnnxIntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

OnnxTensorInfo OnnxInfoOf(const onnx::ValueInfoProto& value) {
  OnnxTensorInfo info;
  if (!value.type().has_tensor_type()) return info;
  const auto& tensor = value.type().tensor_type();
  info.dtype = OnnxDtypeName(tensor.elem_type());
  info.element_bytes = OnnxElementBytes(tensor.elem_type());
  if (tensor.has_shape()) {
    info.has_shape = true;
    for (const auto& d : tensor.shape().dim()) info.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  return info;
}

void CollectOnnxTensorInfos(const onnx::GraphProto& graph, std::unordered_map<std::string, OnnxTensorInfo>& infos) {
  for (const auto& v : graph.input()) infos[v.name()] = OnnxInfoOf(v);
  for (const auto& v : graph.value_info()) infos[v.name()] = OnnxInfoOf(v);
  for (const auto& v : graph.output()) {
    OnnxTensorInfo info = OnnxInfoOf(v);
    if (info.has_shape || !infos.count(v.name())) infos[v.name()] = info;
  }
  for (const auto& t : graph.initializer()) {
    OnnxTensorInfo info;
    info.has_shape = true;
    info.dims.assign(t.dims().begin(), t.dims().end());
    info.dtype = OnnxDtypeName(t.data_type());
    info.element_bytes = OnnxElementBytes(t.data_type());
    infos[t.name()] = info;
  }
}

bool OnnxTensorInfo::fully_known() const {
  if (!has_shape) return false;
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

int64_t OnnxTensorInfo::elements() const {
  if (!fully_known()) return 0;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(n, d, &n)) return 0;  // the importer rejects such tensors first
  }
  return n;
}

std::string OnnxOperandMismatch(const onnx::NodeProto& node, const std::vector<const OnnxTensorInfo*>& in,
                                const std::vector<const OnnxTensorInfo*>& out) {
  if ((!node.domain().empty() && node.domain() != "ai.onnx") || in.size() < 2) return "";
  if (node.op_type() == "Reshape") {
    const OnnxTensorInfo* x = in[0];
    const OnnxTensorInfo* y = out.empty() ? nullptr : out[0];
    if (!x || !y || !x->fully_known() || !y->fully_known() || x->elements() == y->elements()) return "";
    return "its input has " + std::to_string(x->elements()) + " elements and its output " +
           std::to_string(y->elements()) + " (a shape fixed when the model was exported?)";
  }
  const std::string& t = node.op_type();
  if (BroadcastingOps().count(t)) return BroadcastMismatch(in);
  const OnnxTensorInfo* a = in[0];
  const OnnxTensorInfo* b = in[1];
  if (!a || !b || !a->fully_known() || !b->fully_known()) return "";
  auto differ = [](int64_t x, int64_t y, const std::string& what) {
    return x == y ? std::string() : what + " " + std::to_string(x) + " and " + std::to_string(y) + " differ";
  };
  if (t == "MatMul" && !a->dims.empty() && !b->dims.empty()) {
    const int64_t k_b = b->dims.size() == 1 ? b->dims[0] : b->dims[b->dims.size() - 2];
    return differ(a->dims.back(), k_b, "the inner dimensions");
  }
  if (t == "Gemm" && a->dims.size() == 2 && b->dims.size() == 2) {
    const int64_t k_a = OnnxIntAttribute(node, "transA", 0) ? a->dims[0] : a->dims[1];
    const int64_t k_b = OnnxIntAttribute(node, "transB", 0) ? b->dims[1] : b->dims[0];
    return differ(k_a, k_b, "the inner dimensions");
  }
  if (t == "Conv" && a->dims.size() >= 3 && b->dims.size() == a->dims.size()) {
    const int64_t group = OnnxIntAttribute(node, "group", 1);
    if (group < 1 || b->dims[1] > std::numeric_limits<int64_t>::max() / group) return "";
    return differ(a->dims[1], b->dims[1] * group, "the input's channels and the weight's (times group)");
  }
  return "";
}

bool OnnxIsMatrixProduct(const std::string& t) {
  return t == "Conv" || t == "ConvTranspose" || t == "Gemm" || t == "MatMul" || t == "LSTM" || t == "GRU" ||
         t == "RNN" || t == "Einsum";
}

bool OnnxIsDataMovement(const std::string& t) {
  static const std::set<std::string> ops = {
      "Reshape",   "Flatten",  "Squeeze",         "Unsqueeze",   "Transpose",   "Concat",         "Split",
      "Slice",     "Gather",   "GatherElements",  "GatherND",    "Identity",    "Shape",          "Size",
      "Constant",  "ConstantOfShape", "Expand",   "Tile",        "Pad",         "Cast",           "CastLike",
      "Dropout",   "Range",    "NonZero",         "ScatterND",   "ScatterElements", "DepthToSpace", "SpaceToDepth",
      "OneHot",    "EyeLike",  "Trilu",           "SequenceConstruct", "SplitToSequence", "ConcatFromSequence",
      "SequenceAt", "Optional", "OptionalGetElement", "OptionalHasElement"};
  return ops.count(t) > 0;
}

std::string OnnxDtypeName(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT: return "float32";
    case onnx::TensorProto::FLOAT16: return "float16";
    case onnx::TensorProto::BFLOAT16: return "bfloat16";
    case onnx::TensorProto::DOUBLE: return "float64";
    case onnx::TensorProto::INT64: return "int64";
    case onnx::TensorProto::INT32: return "int32";
    case onnx::TensorProto::INT16: return "int16";
    case onnx::TensorProto::INT8: return "int8";
    case onnx::TensorProto::UINT8: return "uint8";
    case onnx::TensorProto::UINT16: return "uint16";
    case onnx::TensorProto::UINT32: return "uint32";
    case onnx::TensorProto::UINT64: return "uint64";
    case onnx::TensorProto::BOOL: return "bool";
    default: return "";
  }
}

OnnxNodeCost EstimateOnnxNodeFlops(const onnx::NodeProto& node, const std::vector<const OnnxTensorInfo*>& in,
                                   const std::vector<const OnnxTensorInfo*>& out) {
  const std::string& t = node.op_type();
  const OnnxTensorInfo* x = in.empty() ? nullptr : in[0];
  const OnnxTensorInfo* w = in.size() > 1 ? in[1] : nullptr;
  const OnnxTensorInfo* y = out.empty() ? nullptr : out[0];
  const double out_elements = static_cast<double>(Elements(y));
  const double in_elements = static_cast<double>(Elements(x));
  OnnxNodeCost cost;

  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    cost.known_type = false;
  } else if (OnnxIsDataMovement(t)) {
    cost.flops = 0;
  } else if (t == "Conv") {
    // Each output element is a dot product over (C_in / group) x kernel.
    if (w && w->fully_known() && w->dims.size() >= 2) cost.flops = 2.0 * out_elements * Product(w->dims, 1);
    if (in.size() > 2 && in[2]) cost.flops += out_elements;
  } else if (t == "ConvTranspose") {
    // Each input element scatters into (C_out / group) x kernel outputs.
    if (w && w->fully_known() && w->dims.size() >= 2) cost.flops = 2.0 * in_elements * Product(w->dims, 1);
    if (in.size() > 2 && in[2]) cost.flops += out_elements;
  } else if (t == "Gemm") {
    if (x && x->fully_known() && x->dims.size() == 2) {
      const int64_t k = OnnxIntAttribute(node, "transA", 0) ? x->dims[0] : x->dims[1];
      cost.flops = 2.0 * out_elements * k;
    }
    if (in.size() > 2 && in[2]) cost.flops += out_elements;
  } else if (t == "MatMul" || t == "MatMulInteger") {
    if (x && x->fully_known() && !x->dims.empty()) cost.flops = 2.0 * out_elements * x->dims.back();
  } else if (t == "Einsum") {
    // A multiply-add per point of the iteration space (every label's size).
    std::vector<std::vector<int64_t>> shapes;
    for (const OnnxTensorInfo* i : in) {
      if (i && i->fully_known()) shapes.push_back(i->dims);
    }
    std::string equation;
    for (const auto& a : node.attribute()) {
      if (a.name() == "equation") equation = a.s();
    }
    const std::optional<EinsumResult> einsum = shapes.size() == in.size() ? EvaluateEinsum(equation, shapes) : std::nullopt;
    if (einsum) cost.flops = 2.0 * einsum->multiply_adds;
  } else if (t == "LSTM" || t == "GRU" || t == "RNN") {
    // Costed whole: per time step, the input and recurrent products of every
    // gate for the batch, plus the gates' element-wise work.
    const OnnxTensorInfo* r = in.size() > 2 ? in[2] : nullptr;
    if (x && x->fully_known() && x->dims.size() == 3 && w && w->fully_known() && r && r->fully_known()) {
      const bool batch_first = OnnxIntAttribute(node, "layout", 0) == 1;
      const double steps = batch_first ? x->dims[1] : x->dims[0];
      const double batch = batch_first ? x->dims[0] : x->dims[1];
      const double hidden_total = r->dims.size() == 3 ? static_cast<double>(r->dims[0]) * r->dims[2] : 0;
      const double gate_work = t == "LSTM" ? 12 : (t == "GRU" ? 10 : 2);
      cost.flops = steps * batch * (2.0 * (Product(w->dims) + Product(r->dims)) + gate_work * hidden_total);
    }
  } else if (t == "BatchNormalization" || t == "InstanceNormalization") {
    cost.flops = 2.0 * in_elements;  // a scale and a shift per element once the statistics are folded
  } else if (t == "LayerNormalization" || t == "GroupNormalization") {
    cost.flops = 8.0 * in_elements;  // mean, variance, normalize, scale, shift
  } else if (t == "Softmax" || t == "LogSoftmax") {
    cost.flops = 5.0 * in_elements;  // max, subtract, exp, sum, divide
  } else if (t == "MaxPool" || t == "AveragePool" || t == "LpPool") {
    cost.flops = out_elements * static_cast<double>(Product(OnnxIntsAttribute(node, "kernel_shape")));
  } else if (t == "GlobalAveragePool" || t == "GlobalMaxPool" || t == "GlobalLpPool") {
    cost.flops = in_elements;
  } else if (t.rfind("Reduce", 0) == 0 || t == "ArgMax" || t == "ArgMin" || t == "CumSum" || t == "TopK") {
    cost.flops = in_elements;
  } else if (t == "Resize" || t == "Upsample") {
    cost.flops = 4.0 * out_elements;  // bilinear-ish interpolation
  } else if (auto it = ElementwiseCosts().find(t); it != ElementwiseCosts().end()) {
    cost.flops = it->second * out_elements;
  } else {
    cost.known_type = false;
  }

  if (!cost.known_type) {
    // A guess: one FLOP per element read or written.
    double elements = 0;
    for (const OnnxTensorInfo* i : in) elements += static_cast<double>(Elements(i));
    for (const OnnxTensorInfo* o : out) elements += static_cast<double>(Elements(o));
    cost.flops = elements;
  }
  return cost;
}

}  // namespace devplace
