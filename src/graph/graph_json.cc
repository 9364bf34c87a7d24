#include "graph/graph_json.h"

#include <exception>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "util/error.h"
#include "util/files.h"
#include "util/json_fields.h"
#include "util/json_stream.h"

namespace devplace {
namespace {

using nlohmann::json;

// Output and stage indices are int32 in the graph; wider values are
// rejected rather than cut.
constexpr IntRange kOutputIndexRange{0, std::numeric_limits<int32_t>::max()};
constexpr IntRange kExpertStagesRange{0, std::numeric_limits<int32_t>::max()};
constexpr IntRange kExpertStageRange{kExpertHost, std::numeric_limits<int32_t>::max()};

TensorSpec ReadTensor(const json& node, const JsonFields& op, size_t index) {
  JsonFields t(node, op.where() + ", output " + std::to_string(index));
  if (!node.is_object()) t.Fail("must be an object, not " + DescribeJsonValue(node));
  TensorSpec tensor;
  tensor.dtype = t.String("dtype", "float32");
  for (const json& d : t.Array("shape")) {
    auto dimension = IntegerIn(d, kNonNegative);
    if (!dimension) t.Fail("shape dimensions must be integers >= 0 (found " + DescribeJsonValue(d) + ")");
    tensor.shape.push_back(*dimension);
  }
  if (t.Has("bytes")) {
    tensor.bytes = t.Integer("bytes", kNonNegative);
    // Bytes given need not match the shape (a view, a packed dtype), but the
    // shape's element count must still be a number: the executor makes
    // tensors of it.
    if (!TensorSpec::CheckedBytes(tensor.shape, 1)) t.Fail("the shape's element count does not fit in 64 bits");
  } else {
    const int64_t element_bytes = DtypeBytes(tensor.dtype);
    if (element_bytes == 0) t.Fail("unknown dtype '" + ForMessage(tensor.dtype) + "' and no 'bytes' given");
    std::optional<int64_t> bytes = TensorSpec::CheckedBytes(tensor.shape, element_bytes);
    if (!bytes) t.Fail("the shape's size in bytes does not fit in 64 bits");
    tensor.bytes = *bytes;
  }
  tensor.aliases_persistent = t.Bool("aliases_persistent", false);
  return tensor;
}

// "SOURCE: op ID ('NAME')" when the node has them, else "SOURCE: ops[I]".
std::string DescribeOpNode(const json& node, const std::string& source, size_t index) {
  const auto id = node.is_object() && node.contains("id") ? IntegerIn(node["id"], {}) : std::nullopt;
  if (!id) return source + ": ops[" + std::to_string(index) + "]";
  std::string where = source + ": op " + std::to_string(*id);
  if (node.contains("name") && node["name"].is_string()) {
    where += " ('" + ForMessage(node["name"].get_ref<const std::string&>()) + "')";
  }
  return where;
}

DeviceKindMask ReadDeviceKinds(const JsonFields& r) {
  DeviceKindMask kinds = 0;
  for (const json& kind : r.Array("devices")) {
    auto parsed = kind.is_string() ? ParseDeviceKind(kind.get_ref<const std::string&>()) : std::nullopt;
    if (!parsed) r.Fail("unknown device kind " + DescribeJsonValue(kind) + " in 'devices' (expected \"cpu\" or \"gpu\")");
    kinds |= MaskOf(*parsed);
  }
  if (kinds == 0) r.Fail("'devices' is empty: no device can run it");
  return kinds;
}

Op ReadOp(const JsonFields& r) {
  Op op;
  op.id = r.Integer("id");
  op.name = r.String("name");
  op.type = r.String("type");
  std::string phase = r.String("phase", "forward");
  auto parsed_phase = ParsePhase(phase);
  if (!parsed_phase) r.Fail("unknown phase '" + ForMessage(phase) + "' (expected forward, backward, update or other)");
  op.phase = *parsed_phase;
  // Finalize rejects negative sizes, for graphs built in code as well.
  op.flops = r.Number("flops", 0);
  op.bytes_read = r.Integer("bytes_read", 0);
  op.bytes_written = r.Integer("bytes_written", 0);
  op.persistent_bytes = r.Integer("persistent_bytes", 0);
  op.temporary_bytes = r.Integer("temporary_bytes", 0);
  op.colocation_group = r.String("colocation_group", "");
  op.expert_stage = static_cast<int32_t>(r.Integer("expert_stage", 0, kExpertStageRange));
  const json& outputs = r.Array("outputs");
  for (size_t k = 0; k < outputs.size(); ++k) op.outputs.push_back(ReadTensor(outputs[k], r, k));
  if (r.Has("devices")) op.device_kinds = ReadDeviceKinds(r);
  return op;
}

// The top-level fields, checked in the order both readers report them:
// the document's kind, the version (before anything that a newer version
// might mean differently), "ops", then the rest. `num_ops` counts the op
// objects, read or not.
void ReadTopFields(const json& document, const std::string& source, size_t num_ops, Graph& graph) {
  if (!document.is_object()) throw Error(source + ": expected a JSON object with 'version' and 'ops'");
  JsonFields top(document, source);
  int64_t version = top.Integer("version");
  if (version < 1 || version > kGraphFormatVersion) {
    top.Fail("unsupported graph format version " + std::to_string(version) + " (this devplace reads version " +
             std::to_string(kGraphFormatVersion) + ")");
  }
  top.RequiredArray("ops");
  // Op indices are int32 (Finalize says so too, after every op is read).
  if (num_ops >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) top.Fail("more than 2^31 - 1 ops");
  graph.name = top.String("name", "graph");
  graph.expert_stages = static_cast<int32_t>(top.Integer("expert_stages", 0, kExpertStagesRange));
}

// The data and control inputs of op `dst` (from `r`), by file id.
void ReadEdges(const JsonFields& r, int32_t dst, const std::unordered_map<int64_t, int32_t>& index_of_id,
               Graph& graph) {
  auto resolve = [&](const json& ref, const char* what) {
    auto id = IntegerIn(ref, {});
    if (!id) r.Fail(std::string(what) + " must name an op id (an integer), not " + DescribeJsonValue(ref));
    auto it = index_of_id.find(*id);
    if (it == index_of_id.end()) r.Fail(std::string(what) + " refers to op id " + std::to_string(*id) + ", which does not exist");
    return it->second;
  };
  for (const json& input : r.Array("inputs")) {
    // An input is {"op": id, "output": k} or just an id (output 0).
    if (input.is_object()) {
      JsonFields in(input, r.where() + ", an input");
      const int32_t src = resolve(in.Required("op"), "an input");
      const int64_t output = in.Integer("output", 0, kOutputIndexRange);
      graph.AddDataEdge(src, static_cast<int32_t>(output), dst);
    } else {
      graph.AddDataEdge(resolve(input, "an input"), 0, dst);
    }
  }
  for (const json& input : r.Array("control_inputs")) graph.AddControlEdge(resolve(input, "a control input"), dst);
}

// The whole parsed document in two passes: every op, then every edge (ids
// may point forward). The reference for the streaming reader below, which
// must report what this one reports (tests/graph_json_stream_test.cc).
Graph ReadGraph(const json& document, const std::string& source) {
  Graph graph;
  const bool has_ops = document.is_object() && document.contains("ops") && document["ops"].is_array();
  ReadTopFields(document, source, has_ops ? document["ops"].size() : 0, graph);
  const json& ops = document["ops"];

  // First pass: the ops themselves, so that edges may point forward.
  std::unordered_map<int64_t, int32_t> index_of_id;
  index_of_id.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const json& node = ops[i];
    JsonFields r(node, DescribeOpNode(node, source, i));
    if (!node.is_object()) r.Fail("must be an object, not " + DescribeJsonValue(node));
    Op op = ReadOp(r);
    if (!index_of_id.emplace(op.id, static_cast<int32_t>(i)).second) r.Fail("duplicate op id " + std::to_string(op.id));
    graph.AddOp(std::move(op));
  }

  // Second pass: edges, by file id.
  for (size_t i = 0; i < ops.size(); ++i) {
    ReadEdges(JsonFields(ops[i], DescribeOpNode(ops[i], source, i)), static_cast<int32_t>(i), index_of_id, graph);
  }
  return graph;
}

// A reference by file id from an op to one of its inputs, kept from the
// pass that reads ops to the one that resolves ids (inputs may point
// forward).
struct InputRef {
  int64_t id = 0;      // the producer, by file id
  int32_t dst = 0;     // the consumer, by index
  int32_t output = 0;  // data inputs only
  bool control = false;
};

// Builds a graph from its op objects, given one at a time as a streaming
// parse finds them (it holds one op's DOM, not the file's), and then its
// top-level fields, wherever they were in the file. Errors come out as
// ReadGraph gives them: first the top-level fields, then the first op that
// does not read, then the first input that does not resolve or does not
// read, in file order.
class GraphReader {
 public:
  // `source` must be message-safe (ForMessage).
  explicit GraphReader(std::string source) : source_(std::move(source)) {}

  // The ops array begins again: a repeated "ops" key, whose last value counts.
  void Restart() { *this = GraphReader(std::move(source_)); }

  // Reads op `index` of the file. A problem is kept, not thrown, and
  // nothing more is read after it: Finish reports it in its turn.
  void AddOpNode(const json& node, int64_t index) {
    if (op_error_ || index >= kMaxOps) return;
    try {
      JsonFields r(node, DescribeOpNode(node, source_, static_cast<size_t>(index)));
      if (!node.is_object()) r.Fail("must be an object, not " + DescribeJsonValue(node));
      Op op = ReadOp(r);
      if (!index_of_id_.emplace(op.id, static_cast<int32_t>(index)).second) r.Fail("duplicate op id " + std::to_string(op.id));
      if (!input_error_) ReadInputRefs(r, static_cast<int32_t>(index));
      graph_.AddOp(std::move(op));
    } catch (const Error&) {
      op_error_ = std::current_exception();
    } catch (const json::exception&) {
      op_error_ = std::current_exception();
    }
  }

  // The graph (not finalized), once every op was given; `top` is the
  // document (its "ops" only checked for its type), `num_ops` the number
  // of op objects in the file.
  Graph Finish(const json& top, int64_t num_ops) {
    ReadTopFields(top, source_, static_cast<size_t>(num_ops), graph_);
    if (op_error_) std::rethrow_exception(op_error_);

    // Edges, by file id, in file order.
    for (size_t k = 0; k <= refs_.size(); ++k) {
      if (input_error_ && k == input_error_at_) throw Error(*input_error_);
      if (k == refs_.size()) break;
      const InputRef& ref = refs_[k];
      auto it = index_of_id_.find(ref.id);
      if (it == index_of_id_.end()) {
        const Op& dst = graph_.op(ref.dst);
        // What DescribeOpNode gives for an op that read cleanly.
        throw Error(source_ + ": op " + std::to_string(dst.id) + " ('" + ForMessage(dst.name) + "'): " +
                    (ref.control ? "a control input" : "an input") + " refers to op id " + std::to_string(ref.id) +
                    ", which does not exist");
      }
      if (ref.control) {
        graph_.AddControlEdge(it->second, ref.dst);
      } else {
        graph_.AddDataEdge(it->second, ref.output, ref.dst);
      }
    }
    return std::move(graph_);
  }

 private:
  static constexpr int64_t kMaxOps = std::numeric_limits<int32_t>::max();

  // The data and control inputs of op `dst` (from `r`), by file id. The
  // first that does not read ends the reading of inputs; it is reported
  // after the inputs before it are resolved.
  void ReadInputRefs(const JsonFields& r, int32_t dst) {
    auto id_of = [&](const json& ref, const char* what) {
      auto id = IntegerIn(ref, {});
      if (!id) r.Fail(std::string(what) + " must name an op id (an integer), not " + DescribeJsonValue(ref));
      return *id;
    };
    try {
      for (const json& input : r.Array("inputs")) {
        // An input is {"op": id, "output": k} or just an id (output 0).
        if (input.is_object()) {
          JsonFields in(input, r.where() + ", an input");
          refs_.push_back({id_of(in.Required("op"), "an input"), dst, 0, false});
          // After its id: a bad output is reported once the id resolves.
          refs_.back().output = static_cast<int32_t>(in.Integer("output", 0, kOutputIndexRange));
        } else {
          refs_.push_back({id_of(input, "an input"), dst, 0, false});
        }
      }
      for (const json& input : r.Array("control_inputs")) refs_.push_back({id_of(input, "a control input"), dst, 0, true});
    } catch (const Error& e) {
      input_error_ = e.what();
      input_error_at_ = refs_.size();
    }
  }

  std::string source_;
  Graph graph_;
  std::unordered_map<int64_t, int32_t> index_of_id_;
  std::vector<InputRef> refs_;
  std::exception_ptr op_error_;  // the first op that did not read
  std::optional<std::string> input_error_;
  size_t input_error_at_ = 0;  // reported after refs_[0 .. this) resolve
};

// nlohmann's exceptions as an Error naming the input.
template <class Read>
Graph Checked(const std::string& source, Read read) {
  try {
    return read();
  } catch (const nlohmann::json::exception& e) {
    // The checked readers should leave nothing for nlohmann to throw; if one
    // slips through, it still names the input.
    throw Error(ForMessage(source) + ": unexpected JSON content (" + ForMessage(e.what()) + ")");
  }
}

}  // namespace

Graph GraphFromJson(const json& document, const std::string& source) {
  Graph graph = Checked(source, [&] { return ReadGraph(document, ForMessage(source)); });
  graph.Finalize(source);
  return graph;
}

Graph LoadGraphFile(const std::string& path) {
  // Streamed: the file's text and one op's DOM at a time, not the whole
  // DOM (five times the text: 2.2 GB for a million ops).
  std::string text = ReadJsonText(path);
  GraphReader reader(ForMessage(path));
  StreamedJson document = ParseJsonStreamingArray(
      text, path, "ops", [&] { reader.Restart(); },
      [&](json&& node, int64_t index) { reader.AddOpNode(node, index); });
  std::string().swap(text);  // before the graph's indices are built
  Graph graph = Checked(path, [&] { return reader.Finish(document.top, document.elements); });
  graph.Finalize(path);
  return graph;
}

namespace {

// Items grouped by the op they belong to, in their original order: what
// each op's "inputs" and "control_inputs" list.
class ItemsByOp {
 public:
  // `op_of(k)` is the op item k belongs to.
  template <class OpOf>
  ItemsByOp(int32_t num_ops, size_t num_items, OpOf op_of) : offsets_(num_ops + 1, 0), items_(num_items) {
    for (size_t k = 0; k < num_items; ++k) ++offsets_[op_of(k) + 1];
    for (int32_t i = 0; i < num_ops; ++i) offsets_[i + 1] += offsets_[i];
    std::vector<size_t> cursor(offsets_.begin(), offsets_.end() - 1);
    for (size_t k = 0; k < num_items; ++k) items_[cursor[op_of(k)]++] = k;
  }
  std::span<const size_t> of(int32_t op) const { return {items_.data() + offsets_[op], items_.data() + offsets_[op + 1]}; }

 private:
  std::vector<size_t> offsets_;
  std::vector<size_t> items_;
};

// Writes op by op: each op's JSON is built, added to the text, and dropped.
class GraphWriter {
 public:
  explicit GraphWriter(const Graph& graph)
      : graph_(graph),
        inputs_(graph.num_ops(), graph.data_edges().size(), [&](size_t e) { return graph.data_edges()[e].dst; }),
        control_inputs_(graph.num_ops(), graph.control_edges().size(),
                        [&](size_t e) { return graph.control_edges()[e].dst; }) {}

  json Op(int32_t i) const {
    const devplace::Op& op = graph_.op(i);
    json node = {{"id", op.id}, {"name", op.name}, {"type", op.type}, {"phase", PhaseName(op.phase)}};
    if (op.flops != 0) node["flops"] = op.flops;
    if (op.bytes_read != 0) node["bytes_read"] = op.bytes_read;
    if (op.bytes_written != 0) node["bytes_written"] = op.bytes_written;
    json outputs = json::array();
    for (const TensorSpec& t : op.outputs) {
      json tensor = {{"shape", t.shape}, {"dtype", t.dtype}, {"bytes", t.bytes}};
      if (t.aliases_persistent) tensor["aliases_persistent"] = true;
      outputs.push_back(std::move(tensor));
    }
    node["outputs"] = std::move(outputs);
    if (op.persistent_bytes != 0) node["persistent_bytes"] = op.persistent_bytes;
    if (op.temporary_bytes != 0) node["temporary_bytes"] = op.temporary_bytes;
    if (op.device_kinds != kAllDeviceKinds) {
      json kinds = json::array();
      for (int k = 0; k < kNumDeviceKinds; ++k) {
        if (op.device_kinds & MaskOf(static_cast<DeviceKind>(k))) kinds.push_back(DeviceKindName(static_cast<DeviceKind>(k)));
      }
      node["devices"] = std::move(kinds);
    }
    if (!op.colocation_group.empty()) node["colocation_group"] = op.colocation_group;
    if (graph_.expert_stages > 0) node["expert_stage"] = op.expert_stage;
    if (!inputs_.of(i).empty()) {
      json inputs = json::array();
      for (size_t e : inputs_.of(i)) {
        const DataEdge& edge = graph_.data_edges()[e];
        inputs.push_back({{"op", graph_.op(edge.src).id}, {"output", edge.src_output}});
      }
      node["inputs"] = std::move(inputs);
    }
    if (!control_inputs_.of(i).empty()) {
      json control_inputs = json::array();
      for (size_t e : control_inputs_.of(i)) control_inputs.push_back(graph_.op(graph_.control_edges()[e].src).id);
      node["control_inputs"] = std::move(control_inputs);
    }
    return node;
  }

  // The document with an empty "ops" array.
  json Head() const {
    json document = {{"format", "devplace-graph"}, {"version", kGraphFormatVersion}, {"name", graph_.name}};
    if (graph_.expert_stages > 0) document["expert_stages"] = graph_.expert_stages;
    document["ops"] = json::array();
    return document;
  }

 private:
  const Graph& graph_;
  ItemsByOp inputs_;
  ItemsByOp control_inputs_;
};

// GraphToJson(graph).dump(1) + "\n", byte for byte, without the whole
// document's DOM (2 GB for a million ops): the head is dumped with an empty
// "ops", and each op's dump, indented two more spaces, goes inside it.
std::string GraphText(const Graph& graph) {
  GraphWriter writer(graph);
  const std::string head = writer.Head().dump(1) + "\n";
  // Keys are sorted and "version" follows "ops", and a newline inside a
  // string is escaped, so this is the one place it can be.
  const std::string empty_ops = "\n \"ops\": []";
  const size_t at = head.find(empty_ops);
  if (at == std::string::npos) throw std::logic_error("graph writer: no empty \"ops\" in the head");
  if (graph.num_ops() == 0) return head;
  const size_t open = at + empty_ops.size() - 1;  // the ']'
  std::string text = head.substr(0, open);
  text += '\n';
  for (int32_t i = 0; i < graph.num_ops(); ++i) {
    if (i > 0) text += ",\n";
    const std::string op = writer.Op(i).dump(1);
    text += "  ";
    for (char c : op) {
      text += c;
      if (c == '\n') text += "  ";
    }
  }
  text += "\n ";
  text += head.substr(open);
  return text;
}

}  // namespace

json GraphToJson(const Graph& graph) {
  GraphWriter writer(graph);
  json document = writer.Head();
  json& ops = document["ops"];
  for (int32_t i = 0; i < graph.num_ops(); ++i) ops.push_back(writer.Op(i));
  return document;
}

void SaveGraphFile(const Graph& graph, const std::string& path) {
  std::string text;
  try {
    text = GraphText(graph);
  } catch (const nlohmann::json::exception& e) {
    // Finalize admits only UTF-8 names, so this is a graph built in code
    // and never finalized; say so rather than crash.
    throw Error(ForMessage(path) + ": cannot write the graph: " + ForMessage(e.what()));
  }
  WriteFileAtomically(path, text);
}

}  // namespace devplace
