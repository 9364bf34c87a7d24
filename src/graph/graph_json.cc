#include "graph/graph_json.h"

#include <limits>
#include <optional>
#include <unordered_map>

#include "util/error.h"
#include "util/files.h"
#include "util/json_fields.h"

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

Graph ReadGraph(const json& document, const std::string& source) {
  if (!document.is_object()) throw Error(source + ": expected a JSON object with 'version' and 'ops'");
  JsonFields top(document, source);
  int64_t version = top.Integer("version");
  if (version < 1 || version > kGraphFormatVersion) {
    top.Fail("unsupported graph format version " + std::to_string(version) + " (this devplace reads version " +
             std::to_string(kGraphFormatVersion) + ")");
  }
  const json& ops = top.RequiredArray("ops");
  // Op indices are int32 (Finalize says so too, after every op is read).
  if (ops.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) top.Fail("more than 2^31 - 1 ops");

  Graph graph;
  graph.name = top.String("name", "graph");
  graph.expert_stages = static_cast<int32_t>(top.Integer("expert_stages", 0, kExpertStagesRange));

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

}  // namespace

Graph GraphFromJson(const json& document, const std::string& source) {
  Graph graph;
  try {
    graph = ReadGraph(document, ForMessage(source));
  } catch (const nlohmann::json::exception& e) {
    // The checked readers should leave nothing for nlohmann to throw; if one
    // slips through, it still names the input.
    throw Error(ForMessage(source) + ": unexpected JSON content (" + ForMessage(e.what()) + ")");
  }
  graph.Finalize(source);
  return graph;
}

Graph LoadGraphFile(const std::string& path) { return GraphFromJson(ReadJsonFile(path), path); }

json GraphToJson(const Graph& graph) {
  json ops = json::array();
  std::vector<json> inputs(graph.num_ops(), json::array());
  std::vector<json> control_inputs(graph.num_ops(), json::array());
  for (const DataEdge& e : graph.data_edges()) {
    inputs[e.dst].push_back({{"op", graph.op(e.src).id}, {"output", e.src_output}});
  }
  for (const ControlEdge& e : graph.control_edges()) control_inputs[e.dst].push_back(graph.op(e.src).id);

  for (int32_t i = 0; i < graph.num_ops(); ++i) {
    const Op& op = graph.op(i);
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
    if (graph.expert_stages > 0) node["expert_stage"] = op.expert_stage;
    if (!inputs[i].empty()) node["inputs"] = std::move(inputs[i]);
    if (!control_inputs[i].empty()) node["control_inputs"] = std::move(control_inputs[i]);
    ops.push_back(std::move(node));
  }
  json document = {{"format", "devplace-graph"}, {"version", kGraphFormatVersion}, {"name", graph.name}};
  if (graph.expert_stages > 0) document["expert_stages"] = graph.expert_stages;
  document["ops"] = std::move(ops);
  return document;
}

void SaveGraphFile(const Graph& graph, const std::string& path) {
  std::string text;
  try {
    text = GraphToJson(graph).dump(1) + "\n";
  } catch (const nlohmann::json::exception& e) {
    // Finalize admits only UTF-8 names, so this is a graph built in code
    // and never finalized; say so rather than crash.
    throw Error(ForMessage(path) + ": cannot write the graph: " + ForMessage(e.what()));
  }
  WriteFileAtomically(path, text);
}

}  // namespace devplace
