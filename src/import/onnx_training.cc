#include "import/onnx_training.h"

#include <algorithm>
#include <set>
#include <string>

#include "import/onnx_flops.h"

namespace devplace {
namespace {

bool IsFloat(const TensorSpec& t) { return t.dtype.rfind("float", 0) == 0 || t.dtype == "bfloat16"; }

// Import made every shape's bytes with TensorSpec::Make, which refuses
// counts that pass int64.
int64_t Elements(const TensorSpec& t) { return TensorSpec::CheckedBytes(t.shape, 1).value_or(0); }

}  // namespace

void SynthesizeTraining(Graph& graph, const std::vector<bool>& trainable,
                        const std::vector<std::pair<int32_t, int32_t>>& outputs, int32_t optimizer_slots) {
  std::set<std::string> names;
  for (const Op& op : graph.ops()) names.insert(op.name);
  auto unique = [&names](const std::string& name) {
    std::string candidate = name;
    for (int i = 1; !names.insert(candidate).second; ++i) candidate = name + "_" + std::to_string(i);
    return candidate;
  };

  // The loss reads every float output, as a criterion over the model's
  // predictions would.
  Op loss;
  loss.id = graph.num_ops();
  loss.name = unique("loss");
  loss.type = "Loss";
  loss.outputs.push_back(TensorSpec::Make({}, "float32"));
  std::vector<std::pair<int32_t, int32_t>> loss_inputs;
  for (const auto& [op, output] : outputs) {
    const TensorSpec& t = graph.op(op).outputs[output];
    if (!IsFloat(t)) continue;
    loss.flops += 4.0 * static_cast<double>(Elements(t));
    loss.bytes_read += t.bytes;
    loss_inputs.push_back({op, output});
  }
  if (loss_inputs.empty()) return;  // nothing to differentiate
  const int32_t loss_op = graph.AddOp(std::move(loss));
  for (const auto& [op, output] : loss_inputs) graph.AddDataEdge(op, output, loss_op);

  const int32_t forward_ops = graph.num_ops();
  const std::vector<DataEdge> edges = graph.data_edges();  // forward edges only
  std::vector<std::vector<int32_t>> in_edges(forward_ops), out_edges(forward_ops);
  for (int32_t e = 0; e < static_cast<int32_t>(edges.size()); ++e) {
    in_edges[edges[e].dst].push_back(e);
    out_edges[edges[e].src].push_back(e);
  }
  auto edge_tensor = [&](int32_t e) -> const TensorSpec& { return graph.op(edges[e].src).outputs[edges[e].src_output]; };

  // Forward: which ops depend on a trainable weight. Backward: which of
  // those feed the loss through float tensors. Gradients flow where both hold.
  std::vector<bool> requires_grad(forward_ops, false), reaches_loss(forward_ops, false);
  for (int32_t i = 0; i < forward_ops; ++i) {
    requires_grad[i] = i < static_cast<int32_t>(trainable.size()) && trainable[i];
    for (int32_t e : in_edges[i]) requires_grad[i] = requires_grad[i] || (requires_grad[edges[e].src] && IsFloat(edge_tensor(e)));
  }
  reaches_loss[loss_op] = true;
  for (int32_t i = forward_ops - 1; i >= 0; --i) {
    for (int32_t e : out_edges[i]) reaches_loss[i] = reaches_loss[i] || (reaches_loss[edges[e].dst] && IsFloat(edge_tensor(e)));
  }
  auto flows = [&](int32_t op) { return requires_grad[op] && reaches_loss[op]; };
  // An edge carries a gradient back when its consumer has a backward op and
  // its producer wants the gradient.
  auto edge_needs_grad = [&](int32_t e) {
    return flows(edges[e].dst) && flows(edges[e].src) && IsFloat(edge_tensor(e));
  };

  // Each forward op's backward op gets its group; ops without one get a
  // group of their own, named after them.
  auto group_of = [&graph](int32_t op) -> std::string {
    if (graph.op(op).colocation_group.empty()) graph.mutable_op(op).colocation_group = graph.op(op).name;
    return graph.op(op).colocation_group;
  };

  std::vector<std::pair<int32_t, int32_t>> grad_of_edge(edges.size(), {-1, -1});
  for (int32_t x = forward_ops - 1; x >= 0; --x) {
    if (!flows(x)) continue;
    const bool is_weight = x < static_cast<int32_t>(trainable.size()) && trainable[x];
    // The gradients arriving for x's outputs, from its consumers' backward ops.
    std::vector<int32_t> arriving;
    for (int32_t e : out_edges[x]) {
      if (grad_of_edge[e].first >= 0) arriving.push_back(e);
    }
    if (is_weight) {
      const Op& w = graph.op(x);
      Op update;
      update.id = graph.num_ops();
      update.name = unique(w.name + "/update");
      update.type = optimizer_slots >= 2 ? "ApplyAdam" : "ApplyMomentum";
      update.phase = Phase::kUpdate;
      const double elements = static_cast<double>(Elements(w.outputs[0]));
      update.flops = (optimizer_slots >= 2 ? 10.0 : 3.0) * elements +
                     static_cast<double>(std::max<size_t>(arriving.size(), 1) - 1) * elements;
      update.bytes_read = w.outputs[0].bytes * (2 + optimizer_slots);
      update.bytes_written = w.outputs[0].bytes * (1 + optimizer_slots);
      update.colocation_group = group_of(x);
      const int32_t u = graph.AddOp(std::move(update));
      graph.AddDataEdge(x, 0, u);
      for (int32_t e : arriving) graph.AddDataEdge(grad_of_edge[e].first, grad_of_edge[e].second, u);
      continue;
    }
    const Op& f = graph.op(x);
    Op grad;
    grad.id = graph.num_ops();
    grad.name = unique(f.name + "/grad");
    grad.type = f.type + "Grad";
    grad.phase = Phase::kBackward;
    grad.device_kinds = f.device_kinds;
    grad.expert_stage = f.expert_stage;
    std::vector<int32_t> grad_edges;
    for (int32_t e : in_edges[x]) {
      if (!edge_needs_grad(e)) continue;
      grad_edges.push_back(e);
      TensorSpec t = edge_tensor(e);
      t.aliases_persistent = false;
      grad.outputs.push_back(t);
      grad.bytes_written += t.bytes;
    }
    // Matrix products pay one product per input gradient; other ops about
    // one pass over their data; summing several arriving gradients one add
    // per extra term. A loop's body (a scripted RNN's cell) is mostly
    // products: its gradient is costed as theirs.
    if (OnnxIsMatrixProduct(f.type) || f.type == "Loop" || f.type == "Scan") {
      // Biases (rank 1) cost only a reduction, left out here.
      size_t products = 0;
      for (int32_t e : grad_edges) products += edge_tensor(e).shape.size() >= 2 ? 1 : 0;
      grad.flops = f.flops * static_cast<double>(std::min<size_t>(products, 2));
    } else {
      grad.flops = f.flops;
    }
    int64_t gradient_elements = 0;  // of one arriving gradient: they all have the output's shape
    for (int32_t e : arriving) {
      gradient_elements = std::max(gradient_elements, Elements(edge_tensor(e)));
      grad.bytes_read += edge_tensor(e).bytes;
    }
    if (arriving.size() > 1) grad.flops += static_cast<double>(arriving.size() - 1) * gradient_elements;
    grad.colocation_group = group_of(x);
    const int32_t b = graph.AddOp(std::move(grad));
    // The activations the gradient rule reads stay alive until it runs.
    std::set<std::pair<int32_t, int32_t>> saved;
    for (int32_t e : in_edges[x]) {
      if (!IsFloat(edge_tensor(e)) || !saved.insert({edges[e].src, edges[e].src_output}).second) continue;
      graph.AddDataEdge(edges[e].src, edges[e].src_output, b);
      graph.mutable_op(b).bytes_read += edge_tensor(e).bytes;
    }
    for (int32_t e : arriving) graph.AddDataEdge(grad_of_edge[e].first, grad_of_edge[e].second, b);
    for (size_t k = 0; k < grad_edges.size(); ++k) grad_of_edge[grad_edges[k]] = {b, static_cast<int32_t>(k)};
  }
}

}  // namespace devplace
