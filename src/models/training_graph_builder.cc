#include "models/training_graph_builder.h"

#include <cassert>
#include <utility>

#include <cmath>

#include "models/checked.h"
#include "util/error.h"

namespace devplace {
namespace {

using models::CheckedAdd;
using models::CheckedElements;
using models::CheckedMul;

int64_t Elements(const std::vector<int64_t>& shape) { return CheckedElements(shape); }

// A reference to a variable's buffer (what Assign and ScatterAdd return):
// it has a shape but allocates nothing.
TensorSpec Ref(const std::vector<int64_t>& shape) {
  TensorSpec t = TensorSpec::Make(shape);
  t.bytes = 0;
  return t;
}

}  // namespace

int32_t OptimizerSlots(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kAdam: return 2;
    case Optimizer::kRmsProp: return 2;
    case Optimizer::kMomentum: return 1;
  }
  return 0;
}

TrainingGraphBuilder::TrainingGraphBuilder(std::string graph_name, Optimizer optimizer) : optimizer_(optimizer) {
  graph_.name = std::move(graph_name);
  contexts_.push_back(Context{});
}

TrainingGraphBuilder::Scope::~Scope() {
  if (builder_ != nullptr) builder_->Pop();
}

TrainingGraphBuilder::Scope TrainingGraphBuilder::Push(Context context) {
  contexts_.push_back(std::move(context));
  return Scope(this);
}

TrainingGraphBuilder::Scope TrainingGraphBuilder::NameScope(const std::string& name) {
  Context c = contexts_.back();
  c.prefix += name + "/";
  return Push(std::move(c));
}

TrainingGraphBuilder::Scope TrainingGraphBuilder::GroupScope(const std::string& group, int32_t stage) {
  Context c = contexts_.back();
  c.group = group;
  c.stage = stage;
  return Push(std::move(c));
}

TrainingGraphBuilder::Scope TrainingGraphBuilder::StageScope(int32_t stage) {
  Context c = contexts_.back();
  c.stage = stage;
  return Push(std::move(c));
}

TrainingGraphBuilder::Scope TrainingGraphBuilder::HostScope() {
  Context c = contexts_.back();
  c.kinds = MaskOf(DeviceKind::kCpu);
  c.stage = kExpertHost;
  return Push(std::move(c));
}

TrainingGraphBuilder::Scope TrainingGraphBuilder::ColocateWith(Tensor t) {
  Context c = contexts_.back();
  c.group = GroupOf(t.op);
  c.stage = graph_.op(t.op).expert_stage;
  c.kinds = graph_.op(t.op).device_kinds;
  return Push(std::move(c));
}

TrainingGraphBuilder::Scope TrainingGraphBuilder::UpdateScope() {
  Context c = contexts_.back();
  c.phase = Phase::kUpdate;
  return Push(std::move(c));
}

std::string TrainingGraphBuilder::UniqueName(const std::string& name) {
  auto [it, inserted] = name_uses_.emplace(name, 0);
  if (inserted) return name;
  // TensorFlow's rule: "MatMul", "MatMul_1", "MatMul_2", ...
  while (true) {
    std::string candidate = name + "_" + std::to_string(++it->second);
    if (name_uses_.emplace(candidate, 0).second) return candidate;
  }
}

void TrainingGraphBuilder::CheckLimits(const std::string& name, const std::vector<TensorSpec>& outputs,
                                       double flops) const {
  const std::string where = "model '" + ForMessage(graph_.name) + "': op '" + ForMessage(name) + "'";
  if (graph_.num_ops() >= models::kMaxGeneratedOps) {
    throw Error("model '" + ForMessage(graph_.name) + "' would have more than " +
                std::to_string(models::kMaxGeneratedOps) + " ops; choose smaller parameters");
  }
  for (const TensorSpec& t : outputs) {
    if (t.bytes > models::kMaxTensorBytes) {
      throw Error(where + " would output a tensor of " + std::to_string(t.bytes) +
                  " bytes, over the 1 TiB limit; choose smaller parameters");
    }
  }
  if (!std::isfinite(flops) || flops < 0) throw Error(where + " would have " + std::to_string(flops) + " FLOPs");
}

std::vector<Tensor> TrainingGraphBuilder::EmitAll(OpSpec spec) {
  const Context& c = contexts_.back();
  CheckLimits(c.prefix + spec.name, spec.outputs, spec.flops);
  Op op;
  op.id = graph_.num_ops();
  op.name = UniqueName(c.prefix + spec.name);
  op.type = std::move(spec.type);
  op.phase = c.phase;
  op.flops = spec.flops;
  op.outputs = std::move(spec.outputs);
  op.device_kinds = c.kinds;
  op.colocation_group = c.group;
  op.expert_stage = c.stage;
  if (spec.aliases_input) {
    op.bytes_read = 8;  // a shape; the data stays where it is
  } else {
    for (const Tensor& t : spec.inputs) op.bytes_read = CheckedAdd(op.bytes_read, this->spec(t).bytes, "bytes read");
    for (const TensorSpec& t : op.outputs) op.bytes_written = CheckedAdd(op.bytes_written, t.bytes, "bytes written");
  }
  const int32_t num_outputs = models::ToInt32(static_cast<int64_t>(op.outputs.size()), "output count");
  const int32_t index = graph_.AddOp(std::move(op));
  for (const Tensor& t : spec.inputs) {
    assert(t.valid() && t.op < index);
    graph_.AddDataEdge(t.op, t.index, index);
  }

  OpInfo info;
  if (c.phase == Phase::kForward && spec.grad) {
    for (const Tensor& t : spec.inputs) info.requires_grad = info.requires_grad || info_[t.op].requires_grad;
    if (info.requires_grad) {
      info.inputs = std::move(spec.inputs);
      info.grad = std::move(spec.grad);
    }
  }
  info_.push_back(std::move(info));

  std::vector<Tensor> outputs;
  for (int32_t i = 0; i < num_outputs; ++i) outputs.push_back({index, i});
  return outputs;
}

Tensor TrainingGraphBuilder::Emit(OpSpec spec) {
  std::vector<Tensor> outputs = EmitAll(std::move(spec));
  return outputs.empty() ? Tensor{} : outputs.front();
}

Tensor TrainingGraphBuilder::Variable(const std::string& name, std::vector<int64_t> shape, VariableOptions options) {
  const Context& c = contexts_.back();
  Op op;
  op.id = graph_.num_ops();
  op.name = UniqueName(c.prefix + name);
  op.type = "VariableV2";
  op.phase = Phase::kForward;
  op.outputs.push_back(TensorSpec::Make(std::move(shape)));
  CheckLimits(op.name, op.outputs, 0);
  op.outputs[0].aliases_persistent = true;  // its value is its persistent memory
  const int64_t value_bytes = op.outputs[0].bytes;
  op.persistent_bytes =
      CheckedMul(value_bytes, 1 + (options.trainable ? OptimizerSlots(optimizer_) : 0), "persistent bytes");
  op.bytes_read = 8;  // it hands out a reference
  op.device_kinds = c.kinds;
  // A variable, its gradient sum and its update share a device; outside a
  // model-specific group that is a group of its own.
  op.colocation_group = c.group.empty() ? op.name : c.group;
  op.expert_stage = c.stage;
  const int32_t index = graph_.AddOp(std::move(op));
  OpInfo info;
  info.requires_grad = options.trainable;
  info.trainable_variable = options.trainable;
  info_.push_back(std::move(info));
  return {index, 0};
}

const std::string& TrainingGraphBuilder::GroupOf(int32_t op) {
  if (graph_.op(op).colocation_group.empty()) graph_.mutable_op(op).colocation_group = graph_.op(op).name;
  return graph_.op(op).colocation_group;
}

TrainingGraphBuilder::Context TrainingGraphBuilder::BackwardContext(int32_t forward_op) {
  Context c;
  c.prefix = "gradients/" + graph_.op(forward_op).name + "_grad/";
  c.group = GroupOf(forward_op);
  c.stage = graph_.op(forward_op).expert_stage;
  c.kinds = graph_.op(forward_op).device_kinds;
  c.phase = Phase::kBackward;
  return c;
}

Tensor TrainingGraphBuilder::Sum(const std::vector<Tensor>& terms, const std::string& name) {
  assert(!terms.empty());
  // The terms are summed as they arrive, one Add per term (what
  // TensorFlow's AccumulateNV2 and its while-loop gradient accumulators do),
  // so a weight read at each of 40 time steps keeps a running sum, not 40
  // gradients waiting for one AddN. Terms arrive in the order the backward
  // pass makes them.
  const std::vector<int64_t> shape = this->shape(terms.front());
  const double n = static_cast<double>(Elements(shape));
  Tensor sum = terms.front();
  for (size_t i = 1; i < terms.size(); ++i) sum = Emit({name, "Add", {sum, terms[i]}, {TensorSpec::Make(shape)}, n});
  return sum;
}

Tensor TrainingGraphBuilder::Densify(const Gradient& g, const std::vector<int64_t>& shape) {
  if (!g.sparse()) return g.values;
  // IndexedSlices meeting a dense gradient become a dense tensor.
  return Emit({"UnsortedSegmentSum", "UnsortedSegmentSum", {g.values, g.indices}, {TensorSpec::Make(shape)},
               static_cast<double>(Elements(this->shape(g.values)))});
}

Gradient TrainingGraphBuilder::Aggregate(std::vector<Gradient> terms, const std::vector<int64_t>& shape) {
  if (terms.size() == 1) return terms.front();
  bool all_sparse = true;
  for (const Gradient& g : terms) all_sparse = all_sparse && g.sparse();
  if (all_sparse) {
    // IndexedSlices sum by concatenation (rows may repeat).
    std::vector<Tensor> values, indices;
    int64_t rows = 0;
    for (const Gradient& g : terms) {
      values.push_back(g.values);
      indices.push_back(g.indices);
      rows = CheckedAdd(rows, this->shape(g.values)[0], "gradient rows");
    }
    std::vector<int64_t> value_shape = this->shape(terms.front().values);
    value_shape[0] = rows;
    Tensor v = Emit({"concat", "ConcatV2", values, {TensorSpec::Make(value_shape)}, 0});
    Tensor i = Emit({"concat_1", "ConcatV2", indices, {TensorSpec::Make({rows}, "int32")}, 0});
    return {v, i};
  }
  std::vector<Tensor> dense;
  for (const Gradient& g : terms) dense.push_back(Densify(g, shape));
  return {Sum(dense, "accumulate"), {}};
}

void TrainingGraphBuilder::ApplyUpdate(int32_t variable_op, const Gradient& grad) {
  const Op& var = graph_.op(variable_op);  // valid until the first Emit
  Context c;
  c.prefix = "train/" + var.name + "/";
  c.group = var.colocation_group;
  c.stage = var.expert_stage;
  c.kinds = var.device_kinds;
  c.phase = Phase::kUpdate;
  const std::vector<int64_t> shape = var.outputs[0].shape;
  const int64_t n = Elements(shape);
  const int64_t value_bytes = var.outputs[0].bytes;
  Scope scope = Push(c);
  const int32_t slots = OptimizerSlots(optimizer_);

  if (!grad.sparse()) {
    static const char* kTypes[] = {"ApplyAdam", "ApplyRMSProp", "ApplyMomentum"};
    static const double kFlopsPerElement[] = {11, 10, 3};
    const int o = static_cast<int>(optimizer_);
    Emit({kTypes[o], kTypes[o], {grad.values}, {}, kFlopsPerElement[o] * n});
    Op& update = graph_.mutable_op(last_op());
    // It reads the value, the slots and the gradient and writes the value
    // and the slots, in place.
    update.bytes_read = CheckedMul(value_bytes, 2 + slots, "update bytes read");
    update.bytes_written = CheckedMul(value_bytes, 1 + slots, "update bytes written");
    return;
  }

  const std::vector<int64_t> rows_shape = this->shape(grad.values);
  const double rows_n = static_cast<double>(Elements(rows_shape));
  if (optimizer_ != Optimizer::kAdam) {
    const char* type = optimizer_ == Optimizer::kRmsProp ? "SparseApplyRMSProp" : "SparseApplyMomentum";
    Emit({type, type, {grad.values, grad.indices}, {}, 10 * rows_n});
    Op& update = graph_.mutable_op(last_op());
    update.bytes_read = CheckedMul(this->spec(grad.values).bytes, 2 + slots, "update bytes read");
    update.bytes_written = CheckedMul(this->spec(grad.values).bytes, 1 + slots, "update bytes written");
    return;
  }
  // TensorFlow 1.x's Adam on IndexedSlices (AdamOptimizer._apply_sparse):
  // the slots decay densely, the rows are scattered in, and the variable
  // moves densely; each dense step makes a temporary the size of the
  // variable.
  const double dense_n = static_cast<double>(n);
  Tensor m_decayed = Emit({"mul", "Mul", {}, {TensorSpec::Make(shape)}, dense_n});
  Tensor m_assign = Emit({"Assign", "Assign", {m_decayed}, {Ref(shape)}, 0});
  Tensor m_scaled = Emit({"mul_1", "Mul", {grad.values}, {TensorSpec::Make(rows_shape)}, rows_n});
  Tensor m_t = Emit({"ScatterAdd", "ScatterAdd", {m_assign, grad.indices, m_scaled}, {Ref(shape)}, rows_n});
  Tensor g_squared = Emit({"mul_2", "Mul", {grad.values, grad.values}, {TensorSpec::Make(rows_shape)}, rows_n});
  Tensor v_scaled = Emit({"mul_3", "Mul", {g_squared}, {TensorSpec::Make(rows_shape)}, rows_n});
  Tensor v_decayed = Emit({"mul_4", "Mul", {}, {TensorSpec::Make(shape)}, dense_n});
  Tensor v_assign = Emit({"Assign_1", "Assign", {v_decayed}, {Ref(shape)}, 0});
  Tensor v_t = Emit({"ScatterAdd_1", "ScatterAdd", {v_assign, grad.indices, v_scaled}, {Ref(shape)}, rows_n});
  Tensor v_sqrt = Emit({"Sqrt", "Sqrt", {v_t}, {TensorSpec::Make(shape)}, dense_n});
  Tensor denominator = Emit({"add", "Add", {v_sqrt}, {TensorSpec::Make(shape)}, dense_n});
  Tensor ratio = Emit({"truediv", "RealDiv", {m_t, denominator}, {TensorSpec::Make(shape)}, dense_n});
  Tensor step = Emit({"mul_5", "Mul", {ratio}, {TensorSpec::Make(shape)}, dense_n});
  Emit({"AssignSub", "AssignSub", {step}, {}, dense_n});
}

void TrainingGraphBuilder::Minimize(Tensor loss, MinimizeOptions options) {
  Require(loss.valid() && shape(loss).empty(), graph_.name + ": the loss must be a scalar");
  const int32_t forward_ops = graph_.num_ops();
  std::vector<std::vector<std::vector<Gradient>>> pending(forward_ops);
  for (int32_t op = 0; op < forward_ops; ++op) pending[op].resize(graph_.op(op).outputs.size());

  {
    // d loss / d loss = 1, next to the loss.
    Scope scope = Push(BackwardContext(loss.op));
    Context& c = contexts_.back();
    c.prefix = "gradients/";
    pending[loss.op][loss.index].push_back({Emit({"Fill", "Fill", {}, {TensorSpec::Make({})}, 0}), {}});
  }

  std::vector<std::pair<int32_t, Gradient>> variable_grads;
  for (int32_t op = forward_ops - 1; op >= 0; --op) {
    if (!info_[op].requires_grad) continue;
    bool any = false;
    for (const auto& terms : pending[op]) any = any || !terms.empty();
    if (!any) continue;
    Scope scope = Push(BackwardContext(op));
    const int32_t num_outputs = static_cast<int32_t>(pending[op].size());
    std::vector<Gradient> output_grads(num_outputs);
    for (int32_t i = 0; i < num_outputs; ++i) {
      if (!pending[op][i].empty()) output_grads[i] = Aggregate(std::move(pending[op][i]), shape({op, i}));
    }
    if (info_[op].trainable_variable) {
      variable_grads.emplace_back(op, output_grads[0]);
      continue;
    }
    // Copies: the rule adds ops, which may move info_.
    const std::vector<Tensor> inputs = info_[op].inputs;
    const GradRule rule = info_[op].grad;
    GradContext ctx{*this, inputs, {}, {}, {}, std::vector<Gradient>(inputs.size())};
    for (int32_t i = 0; i < num_outputs; ++i) {
      ctx.outputs.push_back({op, i});
      ctx.output_grads.push_back(output_grads[i].valid() ? Densify(output_grads[i], shape({op, i})) : Tensor{});
    }
    for (const Tensor& t : inputs) ctx.input_needs_grad.push_back(info_[t.op].requires_grad);
    rule(ctx);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (ctx.input_grads[i].valid() && ctx.input_needs_grad[i]) {
        pending[inputs[i].op][inputs[i].index].push_back(ctx.input_grads[i]);
      }
    }
  }

  if (options.clip_by_global_norm && !variable_grads.empty()) {
    // tf.clip_by_global_norm: an L2Loss per gradient, their sum, one scale,
    // and a Mul per gradient. No gradient is updated before all are known.
    std::vector<Tensor> squares;
    for (auto& [var, grad] : variable_grads) {
      Context c = contexts_.front();
      c.prefix = "clip_by_global_norm/";
      c.stage = graph_.op(var).expert_stage;
      c.kinds = graph_.op(var).device_kinds;
      c.phase = Phase::kBackward;
      Scope scope = Push(c);
      squares.push_back(Emit({"L2Loss", "L2Loss", {grad.values}, {TensorSpec::Make({})},
                              2.0 * Elements(shape(grad.values))}));
    }
    Context c = contexts_.front();
    c.prefix = "clip_by_global_norm/";
    c.stage = graph_.op(loss.op).expert_stage;
    c.phase = Phase::kBackward;
    Tensor scale;
    {
      Scope scope = Push(c);
      Tensor sum = Emit({"global_norm/AddN", "AddN", squares, {TensorSpec::Make({})}, double(squares.size())});
      Tensor doubled = Emit({"global_norm/mul", "Mul", {sum}, {TensorSpec::Make({})}, 1});
      Tensor norm = Emit({"global_norm/Sqrt", "Sqrt", {doubled}, {TensorSpec::Make({})}, 1});
      Tensor inverse = Emit({"truediv", "RealDiv", {norm}, {TensorSpec::Make({})}, 1});
      Tensor smaller = Emit({"Minimum", "Minimum", {inverse}, {TensorSpec::Make({})}, 1});
      scale = Emit({"mul", "Mul", {smaller}, {TensorSpec::Make({})}, 1});
    }
    for (auto& [var, grad] : variable_grads) {
      Context v = c;
      v.stage = graph_.op(var).expert_stage;
      v.kinds = graph_.op(var).device_kinds;
      Scope scope = Push(v);
      grad.values = Emit({"mul_" + graph_.op(var).name, "Mul", {grad.values, scale},
                          {TensorSpec::Make(shape(grad.values))}, double(Elements(shape(grad.values)))});
    }
  }
  for (const auto& [var, grad] : variable_grads) ApplyUpdate(var, grad);
}

Graph TrainingGraphBuilder::Finish(int32_t expert_stages) {
  graph_.expert_stages = expert_stages;
  graph_.Finalize(graph_.name);
  return std::move(graph_);
}

}  // namespace devplace
