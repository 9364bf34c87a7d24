#include "import/onnx_control_flow.h"

#include <algorithm>
#include <unordered_map>

#include "import/onnx_fold.h"

namespace devplace {

namespace {

const onnx::GraphProto* GraphAttribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.has_g()) return &a.g();
  }
  return nullptr;
}

// One body's tensors, then the enclosing scope's.
class BodyScope {
 public:
  BodyScope(const onnx::GraphProto& body, const OnnxInfoLookup& outer) : outer_(outer) {
    CollectOnnxTensorInfos(body, infos_);
  }

  const OnnxTensorInfo* Find(const std::string& name) const {
    if (name.empty()) return nullptr;
    auto it = infos_.find(name);
    return it != infos_.end() ? &it->second : outer_(name);
  }

 private:
  std::unordered_map<std::string, OnnxTensorInfo> infos_;
  const OnnxInfoLookup& outer_;
};

// One run of `body`: its nodes' FLOPs, their own subgraphs included.
double BodyFlops(const onnx::GraphProto& body, const std::string& owner, const OnnxInfoLookup& outer,
                 const OnnxScalarLookup& scalar, OnnxSubgraphCost& cost) {
  const BodyScope scope(body, outer);
  const OnnxInfoLookup lookup = [&scope](const std::string& name) { return scope.Find(name); };
  double flops = 0;
  for (int n = 0; n < body.node_size(); ++n) {
    const onnx::NodeProto& node = body.node(n);
    std::vector<const OnnxTensorInfo*> in, out;
    for (const auto& name : node.input()) in.push_back(scope.Find(name));
    for (const auto& name : node.output()) out.push_back(scope.Find(name));
    const std::string name = owner + "/" + (node.name().empty() ? node.op_type() + "_" + std::to_string(n) : node.name());
    const OnnxSubgraphCost inner = EstimateOnnxSubgraphFlops(node, name, in, lookup, scalar);
    if (inner.has_subgraph) {
      flops += inner.flops;
      cost.uncounted_loops.insert(cost.uncounted_loops.end(), inner.uncounted_loops.begin(), inner.uncounted_loops.end());
      cost.unknown_types.insert(inner.unknown_types.begin(), inner.unknown_types.end());
      continue;
    }
    const OnnxNodeCost node_cost = EstimateOnnxNodeFlops(node, in, out);
    flops += node_cost.flops;
    if (!node_cost.known_type) cost.unknown_types.insert(node.op_type());
  }
  return flops;
}

}  // namespace

int CompleteLoopStateShapes(onnx::GraphProto& graph) {
  GraphShapes shapes(graph);
  int written = 0;
  for (const auto& node : graph.node()) {
    if (node.op_type() != "Loop" || (!node.domain().empty() && node.domain() != "ai.onnx")) continue;
    const onnx::GraphProto* body = GraphAttribute(node, "body");
    if (!body) continue;
    // Inputs M, cond, then the states; body outputs cond, then the states;
    // node outputs the final states, then the scan outputs.
    for (int k = 0; k + 2 < node.input_size() && k < node.output_size() && k + 1 < body->output_size(); ++k) {
      const std::string& out = node.output(k);
      if (out.empty() || shapes.Find(out)) continue;
      const std::vector<int64_t>* initial = shapes.Find(node.input(k + 2));
      if (!initial) continue;
      const std::optional<std::vector<int64_t>> returned = KnownDims(body->output(k + 1));
      if (!returned || *returned != *initial) continue;
      if (shapes.Complete(out, *returned)) ++written;
    }
  }
  return written;
}

OnnxSubgraphCost EstimateOnnxSubgraphFlops(const onnx::NodeProto& node, const std::string& node_name,
                                           const std::vector<const OnnxTensorInfo*>& inputs,
                                           const OnnxInfoLookup& outer, const OnnxScalarLookup& scalar) {
  OnnxSubgraphCost cost;
  if (!node.domain().empty() && node.domain() != "ai.onnx") return cost;
  const std::string& type = node.op_type();
  if (type == "Loop") {
    const onnx::GraphProto* body = GraphAttribute(node, "body");
    if (!body) return cost;
    cost.has_subgraph = true;
    // Input 0 is the trip count M (absent: run while the condition holds).
    std::optional<int64_t> trips;
    if (node.input_size() > 0 && !node.input(0).empty()) trips = scalar(node.input(0));
    if (!trips || *trips < 0 || *trips > kMaxCostedTripCount) {
      cost.uncounted_loops.push_back(node_name);
      trips = 1;
    }
    cost.flops = static_cast<double>(*trips) * BodyFlops(*body, node_name, outer, scalar, cost);
  } else if (type == "Scan") {
    const onnx::GraphProto* body = GraphAttribute(node, "body");
    if (!body) return cost;
    cost.has_subgraph = true;
    // The scan runs along axis scan_input_axes[0] (default 0) of the first
    // scan input, which follows the state variables.
    const int64_t scan_inputs = OnnxIntAttribute(node, "num_scan_inputs", 0);
    const std::vector<int64_t> axes = OnnxIntsAttribute(node, "scan_input_axes");
    int64_t axis = axes.empty() ? 0 : axes[0];
    int64_t length = -1;
    const int64_t first_scan = static_cast<int64_t>(inputs.size()) - scan_inputs;
    if (scan_inputs > 0 && first_scan >= 0 && first_scan < static_cast<int64_t>(inputs.size())) {
      const OnnxTensorInfo* x = inputs[first_scan];
      if (x && x->has_shape) {
        const int64_t rank = static_cast<int64_t>(x->dims.size());
        if (axis < 0) axis += rank;
        if (axis >= 0 && axis < rank) length = x->dims[axis];
      }
    }
    if (length < 0) {
      cost.uncounted_loops.push_back(node_name);
      length = 1;
    }
    cost.flops = static_cast<double>(length) * BodyFlops(*body, node_name, outer, scalar, cost);
  } else if (type == "If") {
    const onnx::GraphProto* then_branch = GraphAttribute(node, "then_branch");
    const onnx::GraphProto* else_branch = GraphAttribute(node, "else_branch");
    if (!then_branch && !else_branch) return cost;
    cost.has_subgraph = true;
    // Which branch runs is known only at run time: the dearer one.
    const double then_flops = then_branch ? BodyFlops(*then_branch, node_name + "/then", outer, scalar, cost) : 0;
    const double else_flops = else_branch ? BodyFlops(*else_branch, node_name + "/else", outer, scalar, cost) : 0;
    cost.flops = std::max(then_flops, else_flops);
  }
  return cost;
}

}  // namespace devplace
