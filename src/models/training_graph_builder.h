// Builds a model's training step the way TensorFlow 1.x graph mode does, the
// framework of the placement papers: the forward ops as the model code
// states them, then the backward ops that each forward op's gradient rule
// makes (tf.gradients with colocate_gradients_with_ops, so every backward op
// shares its forward op's co-location group), then one optimizer update per
// trainable variable, co-located with the variable.
//
// This module keeps the bookkeeping: names, co-location groups, expert
// stages, device kinds, which ops lead back to a trainable variable, and how
// the gradients of a tensor read in several places are summed (one Add per
// term as the terms arrive, so a weight read at every time step holds a
// running sum rather than one gradient per step). The op helpers that know
// shapes, FLOPs and gradient rules are in models/tf_ops.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace devplace {

// One output of an op being built.
struct Tensor {
  int32_t op = -1;
  int32_t index = 0;
  bool valid() const { return op >= 0; }
};

// A gradient flowing back: a dense tensor, or TensorFlow's IndexedSlices
// (the rows a Gather read: values [n, ...] and their row numbers [n]).
struct Gradient {
  Tensor values;
  Tensor indices;  // valid only when sparse
  bool valid() const { return values.valid(); }
  bool sparse() const { return indices.valid(); }
};

enum class Optimizer {
  kAdam,     // 2 slots (m, v): RNNLM, NMT, Transformers (2017 §4.1)
  kRmsProp,  // 2 slots (ms, mom) as TF's RMSPropOptimizer with momentum: Inception (2017 §4.1)
  kMomentum  // 1 slot
};
int32_t OptimizerSlots(Optimizer optimizer);

class TrainingGraphBuilder;

// What a gradient rule gets: its forward op's tensors and the summed
// gradients of its outputs; it emits backward ops through `builder` and sets
// the gradients of the inputs that need one.
struct GradContext {
  TrainingGraphBuilder& builder;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  std::vector<Tensor> output_grads;  // invalid where nothing downstream needs it
  std::vector<bool> input_needs_grad;
  std::vector<Gradient> input_grads;  // filled by the rule

  bool needs(int i) const { return input_needs_grad[i]; }
  Tensor dy(int i = 0) const { return output_grads[i]; }
};
using GradRule = std::function<void(GradContext&)>;

struct OpSpec {
  OpSpec(std::string name, std::string type, std::vector<Tensor> inputs, std::vector<TensorSpec> outputs,
         double flops = 0)
      : name(std::move(name)), type(std::move(type)), inputs(std::move(inputs)), outputs(std::move(outputs)),
        flops(flops) {}

  std::string name;  // relative to the current name scope
  std::string type;  // TensorFlow's op type
  std::vector<Tensor> inputs;
  std::vector<TensorSpec> outputs;
  double flops = 0;
  // The output shares its input's buffer (Reshape, Identity, Squeeze): the
  // op moves no data, so its traffic is only a shape.
  bool aliases_input = false;
  GradRule grad;  // how gradients flow back through it; empty: they do not
};

struct VariableOptions {
  bool trainable = true;
};

struct MinimizeOptions {
  // tf.clip_by_global_norm before the update, as the RNNLM and NMT recipes
  // do (Zaremba et al. 2014, Wu et al. 2016): every gradient waits for the
  // global norm.
  bool clip_by_global_norm = false;
};

class TrainingGraphBuilder {
 public:
  TrainingGraphBuilder(std::string graph_name, Optimizer optimizer);

  // Scopes: while a guard lives, new ops get its name prefix, co-location
  // group, expert stage or device kinds. Guards nest and restore on
  // destruction.
  class Scope {
   public:
    explicit Scope(TrainingGraphBuilder* builder) : builder_(builder) {}
    Scope(Scope&& other) noexcept : builder_(other.builder_) { other.builder_ = nullptr; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope();

   private:
    TrainingGraphBuilder* builder_;
  };
  [[nodiscard]] Scope NameScope(const std::string& name);
  // A model-specific co-location group (each LSTM cell, each Inception
  // branch) with its expert stage; nested name scopes keep the group.
  [[nodiscard]] Scope GroupScope(const std::string& group, int32_t stage);
  [[nodiscard]] Scope StageScope(int32_t stage);
  // Ops only a CPU runs (input pipelines), kept on the host by the expert.
  [[nodiscard]] Scope HostScope();
  // Forward-pass ops that update state (moving averages) are updates.
  [[nodiscard]] Scope UpdateScope();

  // Adds a forward op (or, inside a gradient rule, a backward op) and
  // returns its outputs.
  std::vector<Tensor> EmitAll(OpSpec spec);
  Tensor Emit(OpSpec spec);  // the first output (invalid if none)
  int32_t last_op() const { return graph_.num_ops() - 1; }

  // A VariableV2: its value is its output; its persistent memory is the
  // value plus the optimizer's slots when trainable.
  Tensor Variable(const std::string& name, std::vector<int64_t> shape, VariableOptions options = {});

  // Builds the backward pass from `loss` (a scalar) and the updates.
  void Minimize(Tensor loss, MinimizeOptions options = {});

  // The finished graph, finalized, with `expert_stages` stages.
  Graph Finish(int32_t expert_stages);

  const TensorSpec& spec(Tensor t) const { return graph_.op(t.op).outputs[t.index]; }
  // By value: emitting ops may move the graph's storage.
  std::vector<int64_t> shape(Tensor t) const { return spec(t).shape; }
  // Where new ops must go to sit with `t`'s producer (a variable's state
  // updates): its co-location group and expert stage.
  [[nodiscard]] Scope ColocateWith(Tensor t);

 private:
  struct Context {
    std::string prefix;
    std::string group;
    int32_t stage = 0;
    DeviceKindMask kinds = kAllDeviceKinds;
    Phase phase = Phase::kForward;
  };
  struct OpInfo {
    std::vector<Tensor> inputs;
    GradRule grad;
    bool requires_grad = false;  // some input leads back to a trainable variable
    bool trainable_variable = false;
  };

  Scope Push(Context context);
  // Throws Error when adding an op named `name` would pass the generators'
  // bounds (models/checked.h): too many ops, a tensor too large, FLOPs not
  // a finite non-negative number.
  void CheckLimits(const std::string& name, const std::vector<TensorSpec>& outputs, double flops) const;
  void Pop() { contexts_.pop_back(); }
  std::string UniqueName(const std::string& name);
  Tensor Sum(const std::vector<Tensor>& terms, const std::string& name);
  Gradient Aggregate(std::vector<Gradient> terms, const std::vector<int64_t>& shape);
  Tensor Densify(const Gradient& g, const std::vector<int64_t>& shape);
  void ApplyUpdate(int32_t variable_op, const Gradient& grad);
  // The co-location group of a forward op's backward and update ops: its
  // own group, or a new one named after it.
  const std::string& GroupOf(int32_t op);
  Context BackwardContext(int32_t forward_op);

  Graph graph_;
  Optimizer optimizer_;
  std::vector<OpInfo> info_;
  std::vector<Context> contexts_;
  std::unordered_map<std::string, int32_t> name_uses_;  // for TF-style "_1", "_2" suffixes
};

}  // namespace devplace
