#include "import/onnx_validate.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "onnx/defs/schema.h"
#include "util/error.h"

namespace devplace {
namespace {

// Subgraphs nest through attributes; libonnx recurses into each level.
constexpr int kMaxSubgraphDepth = 32;
// Spatial sizes, strides, pads and block sizes beyond this are no real
// model's and would overflow libonnx's int64 shape arithmetic.
constexpr int64_t kMaxAttributeValue = int64_t{1} << 31;

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  const std::string type = ForMessage(node.op_type(), 60);
  if (node.name().empty()) return "node #" + std::to_string(index) + " (" + type + ")";
  return "node '" + ForMessage(node.name()) + "' (" + type + ")";
}

const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

class Validator {
 public:
  Validator(const onnx::ModelProto& model, std::string source) : source_(std::move(source)) {
    for (const auto& opset : model.opset_import()) {
      const std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
      opsets_.emplace(domain, opset.version());
    }
  }

  void Graph(const onnx::GraphProto& graph, int depth) {
    if (depth > kMaxSubgraphDepth) Fail("subgraphs nest more than " + std::to_string(kMaxSubgraphDepth) + " deep");
    scopes_.emplace_back();
    std::set<std::string>& scope = scopes_.back();
    for (const auto& t : graph.initializer()) {
      Tensor(t, "initializer '" + ForMessage(t.name()) + "'");
      scope.insert(t.name());
      ranks_[t.name()] = t.dims_size();
    }
    for (const auto& s : graph.sparse_initializer()) {
      const std::string what = "sparse initializer '" + ForMessage(s.values().name()) + "'";
      Dims({s.dims().begin(), s.dims().end()}, what);
      Tensor(s.values(), what + " values");
      Tensor(s.indices(), what + " indices");
      scope.insert(s.values().name());
    }
    for (const auto& v : graph.input()) {
      Value(v.name(), v.type(), "input");
      scope.insert(v.name());
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape()) {
        ranks_.emplace(v.name(), v.type().tensor_type().shape().dim_size());
      }
    }
    for (const auto& v : graph.output()) Value(v.name(), v.type(), "output");
    for (const auto& v : graph.value_info()) Value(v.name(), v.type(), "value_info");
    for (int n = 0; n < graph.node_size(); ++n) {
      Node(graph.node(n), n, depth);
      // Appended after the node, so a node cannot read its own output. ONNX
      // graphs assign each name once; folding relies on it.
      for (const auto& name : graph.node(n).output()) {
        if (!name.empty() && !scopes_.back().insert(name).second) {
          Fail(NodeLabel(graph.node(n), n) + " produces tensor '" + ForMessage(name) +
               "', which the graph already defines");
        }
      }
    }
    scopes_.pop_back();
  }

 private:
  [[noreturn]] void Fail(const std::string& problem) const { throw Error(source_ + ": " + problem); }

  void Dims(const std::vector<int64_t>& dims, const std::string& what) const {
    for (int64_t d : dims) {
      if (d < 0) Fail(what + " has a negative dimension (" + std::to_string(d) + ")");
    }
    if (CheckedTensorBytes(dims, 1) < 0) Fail(what + " has more elements than devplace handles (dims overflow)");
  }

  // A tensor's element type is known and its data, unless stored outside
  // the file, holds exactly the elements its dims promise: libonnx reads
  // that many without looking.
  void Tensor(const onnx::TensorProto& t, const std::string& what) const {
    const std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    Dims(dims, what);
    const int32_t type = t.data_type();
    if (type == onnx::TensorProto::UNDEFINED || !onnx::TensorProto_DataType_IsValid(type)) {
      Fail(what + " has no known element type (" + std::to_string(type) + ")");
    }
    const int64_t width = OnnxElementBytes(type);
    if (CheckedTensorBytes(dims, std::max<int64_t>(width, 1)) < 0) Fail(what + " is larger than 1 PiB");
    if (t.data_location() == onnx::TensorProto::EXTERNAL) return;
    const int64_t elements = CheckedTensorBytes(dims, 1);
    int64_t held = 0;
    if (t.has_raw_data()) {
      if (type == onnx::TensorProto::STRING) Fail(what + " holds strings as raw bytes");
      if (static_cast<int64_t>(t.raw_data().size()) != elements * width) {
        Fail(what + " has " + std::to_string(t.raw_data().size()) + " bytes of data for " + std::to_string(elements) +
             " elements of " + std::to_string(width) + " bytes");
      }
      return;
    }
    switch (type) {
      case onnx::TensorProto::FLOAT: held = t.float_data_size(); break;
      case onnx::TensorProto::COMPLEX64: held = t.float_data_size() / 2; break;
      case onnx::TensorProto::DOUBLE: held = t.double_data_size(); break;
      case onnx::TensorProto::COMPLEX128: held = t.double_data_size() / 2; break;
      case onnx::TensorProto::INT64: held = t.int64_data_size(); break;
      case onnx::TensorProto::UINT32:
      case onnx::TensorProto::UINT64: held = t.uint64_data_size(); break;
      case onnx::TensorProto::STRING: held = t.string_data_size(); break;
      default: held = t.int32_data_size(); break;  // the narrow types all live in int32_data
    }
    if (held != elements) {
      Fail(what + " has " + std::to_string(held) + " values for " + std::to_string(elements) + " elements");
    }
  }

  void Type(const onnx::TypeProto& type, const std::string& what, int depth) const {
    if (depth > kMaxSubgraphDepth) Fail(what + " has a type nested too deep");
    if (type.has_tensor_type() && type.tensor_type().has_shape()) {
      const auto& shape = type.tensor_type().shape();
      std::vector<int64_t> known;
      for (int i = 0; i < shape.dim_size(); ++i) {
        const auto& d = shape.dim(i);
        if (!d.has_dim_value()) continue;
        if (d.dim_value() < 0) {
          Fail(what + " declares dimension " + std::to_string(i) + " as " + std::to_string(d.dim_value()));
        }
        known.push_back(d.dim_value());
      }
      if (CheckedTensorBytes(known, 1) < 0) Fail(what + " declares more elements than devplace handles");
    }
    if (type.has_sequence_type()) Type(type.sequence_type().elem_type(), what, depth + 1);
    if (type.has_optional_type()) Type(type.optional_type().elem_type(), what, depth + 1);
    if (type.has_map_type()) Type(type.map_type().value_type(), what, depth + 1);
  }

  void Value(const std::string& name, const onnx::TypeProto& type, const std::string& kind) const {
    const std::string what = "graph " + kind + " '" + ForMessage(name) + "'";
    if (name.empty()) Fail("a graph " + kind + " has an empty name");
    Type(type, what, 0);
  }

  const onnx::OpSchema* SchemaOf(const onnx::NodeProto& node) const {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    auto it = opsets_.find(domain);
    if (it == opsets_.end()) return onnx::OpSchemaRegistry::Schema(node.op_type(), domain);
    const int64_t version = std::clamp<int64_t>(it->second, 1, std::numeric_limits<int>::max());
    return onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(version), domain);
  }

  // What the checker's Verify tests and inference functions take for
  // granted: input and output counts, required inputs named, required
  // attributes present with their declared type.
  void Structure(const onnx::NodeProto& node, const std::string& label, const onnx::OpSchema& schema) const {
    if (node.input_size() < schema.min_input() || node.input_size() > schema.max_input()) {
      Fail(label + " has " + std::to_string(node.input_size()) + " inputs; " + node.op_type() + " takes " +
           std::to_string(schema.min_input()) + " to " + std::to_string(schema.max_input()));
    }
    if (node.output_size() < schema.min_output() || node.output_size() > schema.max_output()) {
      Fail(label + " has " + std::to_string(node.output_size()) + " outputs; " + node.op_type() + " gives " +
           std::to_string(schema.min_output()) + " to " + std::to_string(schema.max_output()));
    }
    const auto& formals = schema.inputs();
    for (int i = 0; i < node.input_size(); ++i) {
      if (!node.input(i).empty() || formals.empty()) continue;
      const auto& formal = formals[std::min<size_t>(i, formals.size() - 1)];
      if (formal.GetOption() != onnx::OpSchema::Optional) {
        Fail(label + " has an empty name for its required input " + std::to_string(i));
      }
    }
    const auto& results = schema.outputs();
    for (int k = 0; k < node.output_size(); ++k) {
      if (!node.output(k).empty() || results.empty()) continue;
      if (results[std::min<size_t>(k, results.size() - 1)].GetOption() != onnx::OpSchema::Optional) {
        Fail(label + " has an empty name for its output " + std::to_string(k));
      }
    }
    for (const auto& [name, declared] : schema.attributes()) {
      const onnx::AttributeProto* a = FindAttribute(node, name);
      if (!a) {
        if (declared.required) Fail(label + " lacks its required attribute '" + name + "'");
        continue;
      }
      if (a->ref_attr_name().empty() && a->type() != onnx::AttributeProto::UNDEFINED && a->type() != declared.type) {
        Fail(label + " has attribute '" + name + "' of the wrong type");
      }
    }
  }

  std::vector<int64_t> Ints(const onnx::NodeProto& node, const std::string& name) const {
    const auto* a = FindAttribute(node, name);
    if (!a) return {};
    return {a->ints().begin(), a->ints().end()};
  }

  void InRange(const onnx::NodeProto& node, const std::string& label, const std::string& name, int64_t low) const {
    for (int64_t v : Ints(node, name)) {
      if (v < low || v > kMaxAttributeValue) {
        Fail(label + " has attribute '" + name + "' = " + std::to_string(v) + "; each must be " +
             std::to_string(low) + " to 2^31");
      }
    }
    if (const auto* a = FindAttribute(node, name); a && a->type() == onnx::AttributeProto::INT) {
      if (a->i() < low || a->i() > kMaxAttributeValue) {
        Fail(label + " has attribute '" + name + "' = " + std::to_string(a->i()) + "; it must be " +
             std::to_string(low) + " to 2^31");
      }
    }
  }

  // The attributes libonnx's shape inference divides by, multiplies or
  // indexes with: zero strides and block sizes, pads of the wrong length.
  void Attributes(const onnx::NodeProto& node, const std::string& label) const {
    const std::string& t = node.op_type();
    static const std::vector<std::string> windowed = {"Conv",    "ConvInteger", "QLinearConv", "ConvTranspose",
                                                      "MaxPool", "AveragePool", "LpPool",      "MaxUnpool"};
    if (std::find(windowed.begin(), windowed.end(), t) != windowed.end()) {
      InRange(node, label, "kernel_shape", 1);
      InRange(node, label, "strides", 1);
      InRange(node, label, "dilations", 1);
      InRange(node, label, "pads", 0);
      InRange(node, label, "output_padding", 0);
      InRange(node, label, "output_shape", 0);
      InRange(node, label, "group", 1);
      InRange(node, label, "p", 1);
      // Every per-axis list names the same spatial axes; pads twice over.
      size_t axes = 0;
      std::string first;
      for (const char* name : {"kernel_shape", "strides", "dilations", "output_padding", "output_shape"}) {
        const auto* a = FindAttribute(node, name);
        if (!a) continue;
        const size_t n = static_cast<size_t>(a->ints_size());
        if (first.empty()) {
          axes = n, first = name;
        } else if (n != axes) {
          Fail(label + " has " + std::to_string(n) + " values in '" + name + "' but " + std::to_string(axes) +
               " in '" + first + "'");
        }
      }
      // Where the ranks are known before inference (weights, graph inputs),
      // the data and the weight agree and fix the spatial axes: libonnx
      // takes the kernel from the weight and indexes the data with it.
      const int weight = t == "QLinearConv" ? 3 : (t == "MaxPool" || t == "AveragePool" || t == "LpPool") ? -1 : 1;
      const int data_rank = RankOf(node, 0);
      const int weight_rank = weight >= 0 ? RankOf(node, weight) : -1;
      for (int rank : {data_rank, weight_rank}) {
        if (rank >= 0 && rank < 3) {
          Fail(label + " has an input of rank " + std::to_string(rank) + "; it needs batch, channel and spatial axes");
        }
      }
      if (data_rank >= 0 && weight_rank >= 0 && data_rank != weight_rank) {
        Fail(label + " has data of rank " + std::to_string(data_rank) + " but its input " + std::to_string(weight) +
             " has rank " + std::to_string(weight_rank));
      }
      const int rank = data_rank >= 0 ? data_rank : weight_rank;
      if (rank >= 3) {
        if (!first.empty() && axes != static_cast<size_t>(rank - 2)) {
          Fail(label + " has " + std::to_string(axes) + " values in '" + first + "' for " +
               std::to_string(rank - 2) + " spatial axes");
        }
        axes = static_cast<size_t>(rank - 2);
        if (first.empty()) first = "its inputs";
      }
      if (const auto* pads = FindAttribute(node, "pads")) {
        if (pads->ints_size() % 2 != 0 || (!first.empty() && static_cast<size_t>(pads->ints_size()) != 2 * axes)) {
          Fail(label + " has " + std::to_string(pads->ints_size()) + " values in 'pads'; it needs two per spatial axis");
        }
      }
      if (const auto* a = FindAttribute(node, "auto_pad")) {
        const std::string& s = a->s();
        if (s != "NOTSET" && s != "SAME_UPPER" && s != "SAME_LOWER" && s != "VALID") {
          Fail(label + " has attribute 'auto_pad' = '" + ForMessage(s) + "'");
        }
      }
      if (const auto* a = FindAttribute(node, "ceil_mode"); a && a->i() != 0 && a->i() != 1) {
        Fail(label + " has attribute 'ceil_mode' = " + std::to_string(a->i()) + "; it must be 0 or 1");
      }
    } else if (t == "DepthToSpace" || t == "SpaceToDepth") {
      // Inference divides the channels by blocksize squared.
      if (const auto* a = FindAttribute(node, "blocksize"); a && (a->i() < 1 || a->i() > (int64_t{1} << 15))) {
        Fail(label + " has attribute 'blocksize' = " + std::to_string(a->i()) + "; it must be 1 to 32768");
      }
    } else if (t == "MaxRoiPool") {
      InRange(node, label, "pooled_shape", 1);
    } else if (t == "Split") {
      InRange(node, label, "split", 0);
    } else if (t == "LRN") {
      InRange(node, label, "size", 1);
    }
  }

  void Node(const onnx::NodeProto& node, int index, int depth) {
    const std::string label = NodeLabel(node, index);
    if (node.op_type().empty()) Fail(label + " has no op type");
    // Inference functions dereference the type of every named input: each
    // must come from the graph (or an enclosing one) before this node.
    for (const auto& name : node.input()) {
      if (name.empty() || Visible(name)) continue;
      Fail(label + " reads tensor '" + ForMessage(name) +
           "', which no input, initializer or earlier node produces");
    }
    for (const auto& a : node.attribute()) {
      const std::string what = label + " attribute '" + ForMessage(a.name()) + "'";
      if (a.has_t()) Tensor(a.t(), what);
      for (const auto& t : a.tensors()) Tensor(t, what);
      if (a.has_sparse_tensor()) {
        Dims({a.sparse_tensor().dims().begin(), a.sparse_tensor().dims().end()}, what);
        Tensor(a.sparse_tensor().values(), what + " values");
        Tensor(a.sparse_tensor().indices(), what + " indices");
      }
      if (a.has_g()) Graph(a.g(), depth + 1);
      for (const auto& g : a.graphs()) Graph(g, depth + 1);
    }
    if (const onnx::OpSchema* schema = SchemaOf(node)) Structure(node, label, *schema);
    if (node.domain().empty() || node.domain() == "ai.onnx") Attributes(node, label);
  }

  // The rank of input `slot` of `node` where a weight or graph input gives
  // it before inference; -1 when unknown.
  int RankOf(const onnx::NodeProto& node, int slot) const {
    if (slot >= node.input_size()) return -1;
    auto it = ranks_.find(node.input(slot));
    return it == ranks_.end() ? -1 : it->second;
  }

  bool Visible(const std::string& name) const {
    return std::any_of(scopes_.begin(), scopes_.end(), [&](const auto& scope) { return scope.count(name) > 0; });
  }

  std::string source_;
  std::map<std::string, int64_t> opsets_;
  std::vector<std::set<std::string>> scopes_;
  std::map<std::string, int> ranks_;  // of initializers and graph inputs with shapes  // the graph being read and those enclosing it
};

}  // namespace

int64_t OnnxElementBytes(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::BOOL: return 1;
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: return 2;
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32: return 4;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::COMPLEX64: return 8;
    case onnx::TensorProto::COMPLEX128: return 16;
    default: return 0;
  }
}

int64_t CheckedTensorBytes(const std::vector<int64_t>& dims, int64_t element_bytes) {
  int64_t bytes = element_bytes;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d == 0) return 0;
  }
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(bytes, d, &bytes) || bytes > kMaxOnnxTensorBytes) return -1;
  }
  return bytes;
}

std::string SafeOnnxName(const std::string& name) {
  const std::string escaped = ForMessage(name, std::numeric_limits<size_t>::max());
  const size_t backslashes = static_cast<size_t>(std::count(name.begin(), name.end(), '\\'));
  // Each backslash doubles; any other change means the name was unsafe.
  return escaped.size() == name.size() + backslashes ? name : escaped;
}

void ValidateOnnxModel(const onnx::ModelProto& model, const std::string& source) {
  Validator(model, source).Graph(model.graph(), 0);
}

}  // namespace devplace
