#include "graph/graph_json.h"

#include <unordered_map>

#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

using nlohmann::json;

// Field readers that name the input, the op and the field on a mistake.
class OpReader {
 public:
  OpReader(const json& node, std::string where) : node_(node), where_(std::move(where)) {}

  const std::string& where() const { return where_; }
  bool Has(const char* field) const { return node_.contains(field) && !node_[field].is_null(); }

  [[noreturn]] void Fail(const std::string& problem) const { throw Error(where_ + ": " + problem); }

  const json& Required(const char* field) const {
    if (!Has(field)) Fail(std::string("missing required field '") + field + "'");
    return node_[field];
  }

  std::string String(const char* field, const std::string& fallback, bool required = false) const {
    if (!Has(field)) {
      if (required) Required(field);
      return fallback;
    }
    const json& v = node_[field];
    if (!v.is_string()) Fail(std::string("field '") + field + "' must be a string");
    return v.get<std::string>();
  }

  double Number(const char* field, double fallback) const {
    if (!Has(field)) return fallback;
    const json& v = node_[field];
    if (!v.is_number()) Fail(std::string("field '") + field + "' must be a number");
    return v.get<double>();
  }

  int64_t Integer(const char* field, int64_t fallback, bool required = false) const {
    if (!Has(field)) {
      if (required) Required(field);
      return fallback;
    }
    const json& v = node_[field];
    if (!v.is_number_integer()) Fail(std::string("field '") + field + "' must be an integer");
    return v.get<int64_t>();
  }

  const json& Array(const char* field) const {
    static const json kEmpty = json::array();
    if (!Has(field)) return kEmpty;
    const json& v = node_[field];
    if (!v.is_array()) Fail(std::string("field '") + field + "' must be an array");
    return v;
  }

 private:
  const json& node_;
  std::string where_;
};

TensorSpec ReadTensor(const json& node, const OpReader& op, size_t index) {
  OpReader t(node, op.where() + ", output " + std::to_string(index));
  if (!node.is_object()) t.Fail("must be an object");
  TensorSpec tensor;
  tensor.dtype = t.String("dtype", "float32");
  for (const json& d : t.Array("shape")) {
    if (!d.is_number_integer()) t.Fail("shape dimensions must be integers");
    tensor.shape.push_back(d.get<int64_t>());
  }
  if (t.Has("bytes")) {
    tensor.bytes = t.Integer("bytes", 0);
  } else {
    int64_t element_bytes = DtypeBytes(tensor.dtype);
    if (element_bytes == 0) t.Fail("unknown dtype '" + tensor.dtype + "' and no 'bytes' given");
    tensor.bytes = TensorSpec::Make(tensor.shape, tensor.dtype).bytes;
  }
  if (t.Has("aliases_persistent")) {
    if (!node["aliases_persistent"].is_boolean()) t.Fail("'aliases_persistent' must be true or false");
    tensor.aliases_persistent = node["aliases_persistent"].get<bool>();
  }
  return tensor;
}

}  // namespace

Graph GraphFromJson(const json& document, const std::string& source) {
  if (!document.is_object()) throw Error(source + ": expected a JSON object with 'version' and 'ops'");
  OpReader top(document, source);
  int64_t version = top.Integer("version", 0, /*required=*/true);
  if (version < 1 || version > kGraphFormatVersion) {
    top.Fail("unsupported graph format version " + std::to_string(version) + " (this devplace reads version " +
             std::to_string(kGraphFormatVersion) + ")");
  }
  const json& ops = top.Required("ops");
  if (!ops.is_array()) top.Fail("field 'ops' must be an array");

  Graph graph;
  graph.name = top.String("name", "graph");
  graph.expert_stages = static_cast<int32_t>(top.Integer("expert_stages", 0));
  if (graph.expert_stages < 0) top.Fail("negative 'expert_stages'");

  // First pass: the ops themselves, so that edges may point forward.
  std::unordered_map<int64_t, int32_t> index_of_id;
  index_of_id.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const json& node = ops[i];
    std::string where = source + ": ops[" + std::to_string(i) + "]";
    if (!node.is_object()) throw Error(where + ": must be an object");
    if (node.contains("id") && node["id"].is_number_integer()) {
      where = source + ": op " + std::to_string(node["id"].get<int64_t>());
      if (node.contains("name") && node["name"].is_string()) where += " ('" + node["name"].get<std::string>() + "')";
    }
    OpReader r(node, where);
    Op op;
    op.id = r.Integer("id", 0, /*required=*/true);
    op.name = r.String("name", "", /*required=*/true);
    op.type = r.String("type", "", /*required=*/true);
    std::string phase = r.String("phase", "forward");
    auto parsed_phase = ParsePhase(phase);
    if (!parsed_phase) r.Fail("unknown phase '" + phase + "' (expected forward, backward, update or other)");
    op.phase = *parsed_phase;
    op.flops = r.Number("flops", 0);
    op.bytes_read = r.Integer("bytes_read", 0);
    op.bytes_written = r.Integer("bytes_written", 0);
    op.persistent_bytes = r.Integer("persistent_bytes", 0);
    op.temporary_bytes = r.Integer("temporary_bytes", 0);
    op.colocation_group = r.String("colocation_group", "");
    op.expert_stage = static_cast<int32_t>(r.Integer("expert_stage", 0));
    const json& outputs = r.Array("outputs");
    for (size_t k = 0; k < outputs.size(); ++k) op.outputs.push_back(ReadTensor(outputs[k], r, k));
    if (r.Has("devices")) {
      op.device_kinds = 0;
      for (const json& kind : r.Array("devices")) {
        auto parsed = kind.is_string() ? ParseDeviceKind(kind.get<std::string>()) : std::nullopt;
        if (!parsed) r.Fail("unknown device kind " + kind.dump() + " in 'devices' (expected \"cpu\" or \"gpu\")");
        op.device_kinds |= MaskOf(*parsed);
      }
      if (op.device_kinds == 0) r.Fail("'devices' is empty: no device can run it");
    }
    if (!index_of_id.emplace(op.id, static_cast<int32_t>(i)).second) {
      r.Fail("duplicate op id " + std::to_string(op.id));
    }
    graph.AddOp(std::move(op));
  }

  // Second pass: edges, by file id.
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& dst = graph.op(static_cast<int32_t>(i));
    OpReader r(ops[i], source + ": op " + std::to_string(dst.id) + " ('" + dst.name + "')");
    auto resolve = [&](const json& ref, const char* what) {
      if (!ref.is_number_integer()) r.Fail(std::string(what) + " must name an op id (an integer)");
      auto it = index_of_id.find(ref.get<int64_t>());
      if (it == index_of_id.end()) r.Fail(std::string(what) + " refers to op id " + ref.dump() + ", which does not exist");
      return it->second;
    };
    for (const json& input : r.Array("inputs")) {
      // An input is {"op": id, "output": k} or just an id (output 0).
      int32_t src;
      int64_t output = 0;
      if (input.is_object()) {
        if (!input.contains("op")) r.Fail("an input lacks its 'op'");
        src = resolve(input["op"], "an input");
        if (input.contains("output")) {
          if (!input["output"].is_number_integer()) r.Fail("an input's 'output' must be an integer");
          output = input["output"].get<int64_t>();
        }
      } else {
        src = resolve(input, "an input");
      }
      graph.AddDataEdge(src, static_cast<int32_t>(output), static_cast<int32_t>(i));
    }
    for (const json& input : r.Array("control_inputs")) {
      graph.AddControlEdge(resolve(input, "a control input"), static_cast<int32_t>(i));
    }
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
  WriteFileAtomically(path, GraphToJson(graph).dump(1) + "\n");
}

}  // namespace devplace
