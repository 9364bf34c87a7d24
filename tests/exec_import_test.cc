// The executor on imported graphs: a small CNN imported from ONNX with
// `import --training`, and the same network exported from PyTorch
// (tools/make_exec_test_models.py wrote both into tests/data). Every op
// runs a real kernel, each gives outputs of exactly the graph's shapes, and
// ONNX import's gradient ops are told apart from TensorFlow's of the same
// type names by the graph, not by their shapes.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "exec/executor.h"
#include "exec/kernels/kernel.h"
#include "exec_fixtures.h"
#include "graph/graph_json.h"
#include "import/onnx_import.h"

namespace devplace {
namespace {

using testing::AddOp;
using testing::HostCluster;

std::string TestData(const std::string& name) { return std::string(DEVPLACE_TEST_DATA) + "/" + name; }

Graph ImportedCnn() {
  OnnxImportOptions options;
  options.training = true;
  return ImportOnnxFile(TestData("small_cnn.onnx"), options).graph;
}

Graph ExportedCnn() { return LoadGraphFile(TestData("small_cnn_pytorch.json")); }

// EfficientNet's SiLU (whose backward make_fx writes with fill_),
// ShuffleNet's channel split, MobileNet-V3's hard swish and hard sigmoid, a
// vision transformer's GELU and attention softmax, with their gradients:
// ops that ran as stand-ins until 2026-11-28.
Graph ExportedBlocks() { return LoadGraphFile(TestData("small_blocks_pytorch.json")); }

// Every op of `graph` run once on the CPU in topological order with the
// kernel the executor would pick, each reading its producers' outputs.
// Checks that the kernel takes the op's shapes and gives outputs of the
// graph's shapes and dtypes; returns the outputs.
std::vector<std::vector<at::Tensor>> RunEveryKernel(const Graph& graph) {
  std::vector<std::vector<at::Tensor>> values(graph.num_ops());
  std::vector<OpState> states(graph.num_ops());
  for (int32_t op : graph.topological_order()) {
    const Op& o = graph.op(op);
    std::optional<ImportGradient> layout;
    const KernelFn kernel = KernelFor(graph, op, &layout);
    EXPECT_NE(kernel, nullptr) << o.name << " (" << o.type << ") has no kernel";
    if (kernel == nullptr) continue;
    std::vector<at::Tensor> inputs;
    for (int32_t e : graph.in_data_edges(op)) {
      const DataEdge& edge = graph.data_edges()[e];
      inputs.push_back(values[edge.src].at(edge.src_output));
    }
    KernelCall call(o, std::move(inputs), at::Device(at::kCPU), states[op], 7);
    if (layout) call.import_gradient = &*layout;
    EXPECT_TRUE(kernel(call)) << o.name << " (" << o.type << ") declined its shapes";
    for (size_t i = 0; i < o.outputs.size(); ++i) {
      const at::Tensor& out = call.outputs[i];
      EXPECT_TRUE(out.defined()) << o.name << " (" << o.type << ") left output " << i << " unset";
      if (!out.defined()) continue;
      EXPECT_EQ(out.sizes().vec(), TorchShapeOf(o.outputs[i])) << o.name << " (" << o.type << ") output " << i;
      EXPECT_EQ(out.scalar_type(), ScalarTypeOf(o.outputs[i].dtype)) << o.name << " output " << i;
    }
    values[op] = call.outputs;
  }
  return values;
}

TEST(ExecImportTest, EveryKernelOfAnImportedCnnGivesTheGraphsShapes) {
  const Graph graph = ImportedCnn();
  ASSERT_GT(graph.FindOp("/branch/branch.0/Conv/grad"), 0);  // the backward pass is there
  RunEveryKernel(graph);
}

TEST(ExecImportTest, EveryKernelOfAnExportedCnnGivesTheGraphsShapes) { RunEveryKernel(ExportedCnn()); }

TEST(ExecImportTest, EveryKernelOfExportedActivationAndAttentionBlocksIsRight) {
  const Graph graph = ExportedBlocks();
  using Reference = std::function<at::Tensor(const std::vector<at::Tensor>&)>;
  // Each new kernel against aten's own function of the same inputs.
  const std::map<std::string, Reference> references = {
      {"aten.silu", [](const auto& in) { return at::silu(in[0]); }},
      {"aten.gelu", [](const auto& in) { return at::gelu(in[0]); }},
      {"aten.hardswish", [](const auto& in) { return at::hardswish(in[0]); }},
      {"aten.hardsigmoid", [](const auto& in) { return at::hardsigmoid(in[0]); }},
      {"aten.gelu_backward", [](const auto& in) { return at::gelu_backward(in[0], in[1]); }},
      {"aten.hardswish_backward", [](const auto& in) { return at::hardswish_backward(in[0], in[1]); }},
      {"aten.hardsigmoid_backward", [](const auto& in) { return at::hardsigmoid_backward(in[0], in[1]); }},
      {"aten._softmax_backward_data",
       [](const auto& in) { return at::_softmax_backward_data(in[0], in[1], -1, in[1].scalar_type()); }},
  };
  std::set<std::string> seen;
  for (const Op& op : graph.ops()) seen.insert(op.type);
  for (const auto& [type, reference] : references) EXPECT_TRUE(seen.count(type)) << type << " is no longer in the test model";
  EXPECT_TRUE(seen.count("aten.split") && seen.count("aten.fill_"));
  const auto values = RunEveryKernel(graph);
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    auto reference = references.find(graph.op(op).type);
    if (reference == references.end()) continue;
    std::vector<at::Tensor> inputs;
    for (int32_t e : graph.in_data_edges(op)) {
      const DataEdge& edge = graph.data_edges()[e];
      inputs.push_back(values[edge.src].at(edge.src_output));
    }
    EXPECT_TRUE(at::allclose(values[op].at(0), reference->second(inputs), 1e-5, 1e-6)) << graph.op(op).name;
  }
}

TEST(ExecImportTest, ImportedAndExportedCnnsRunWithoutStandIns) {
  const Cluster cluster = HostCluster(1);
  REQUIRE_CLUSTER(cluster, 1);
  for (const Graph& graph : {ImportedCnn(), ExportedCnn(), ExportedBlocks()}) {
    Executor executor(graph, cluster);
    const ExecStep step = executor.RunStep(Placement(graph.num_ops(), 0));
    ASSERT_TRUE(step.result.ok()) << step.result.reason;
    for (const StandInUse& use : step.stand_ins) ADD_FAILURE() << graph.name << ": " << use.type << ": " << use.why;
    EXPECT_EQ(step.stand_in_share(), 0);
  }
}

// Each gradient op of the import is recognised with the importer's
// layout: its forward op's float inputs first, then one gradient per
// consumer of its output.
TEST(ExecImportTest, ImportGradientOpsAreRecognisedWithTheirForwardInputs) {
  const Graph graph = ImportedCnn();
  int32_t gradients = 0;
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    const Op& o = graph.op(op);
    if (o.phase != Phase::kBackward) continue;
    const auto layout = FindImportGradient(graph, op);
    ASSERT_TRUE(layout.has_value()) << o.name;
    ++gradients;
    EXPECT_EQ(layout->gradient_of.size(), o.outputs.size()) << o.name;
    for (int32_t of : layout->gradient_of) EXPECT_LT(of, layout->forward_inputs) << o.name;
  }
  EXPECT_GT(gradients, 20);
  // The stem's convolution reads the data input, which needs no gradient:
  // its one output is the weight's.
  const int32_t stem = graph.FindOp("/stem/stem.0/Conv/grad");
  ASSERT_GE(stem, 0);
  const auto layout = FindImportGradient(graph, stem);
  ASSERT_TRUE(layout.has_value());
  EXPECT_EQ(layout->forward_inputs, 2);
  EXPECT_EQ(layout->gradient_of, std::vector<int32_t>{1});
}

// "ReluGrad" is TensorFlow's (dy, y) and the importer's (x, dy): the same
// shapes, operands the other way round. The kernel follows the graph.
TEST(ExecImportTest, ReluGradReadsItsOperandsInTheOrderOfItsOrigin) {
  Graph g;
  const TensorSpec spec = TensorSpec::Make({4});
  const int32_t x = AddOp(g, "x", "Input", Phase::kForward, 0, {spec}, {});
  const int32_t relu = AddOp(g, "relu", "Relu", Phase::kForward, 4, {spec}, {x});
  const int32_t dy = AddOp(g, "dy", "Input", Phase::kForward, 0, {spec}, {});
  // TensorFlow's: gradients first, then the Relu's output.
  const int32_t tf = AddOp(g, "gradients/relu_grad", "ReluGrad", Phase::kBackward, 4, {spec}, {dy, relu});
  // The importer's: the forward op's input, then the arriving gradient, in
  // the forward op's group.
  const int32_t onnx = AddOp(g, "relu/grad", "ReluGrad", Phase::kBackward, 4, {spec}, {x, dy});
  g.mutable_op(relu).colocation_group = "relu";
  g.mutable_op(onnx).colocation_group = "relu";
  g.Finalize("relu grads");
  std::optional<ImportGradient> layout;
  EXPECT_EQ(KernelFor(g, tf, &layout), FindKernel("ReluGrad"));
  EXPECT_FALSE(layout.has_value());
  EXPECT_NE(KernelFor(g, onnx, &layout), nullptr);
  ASSERT_TRUE(layout.has_value());
  EXPECT_EQ(layout->forward_inputs, 1);

  const at::Tensor x_value = at::tensor({-1.0f, 2.0f, -3.0f, 4.0f});
  const at::Tensor dy_value = at::tensor({10.0f, 20.0f, 30.0f, 40.0f});
  const at::Tensor expected = at::tensor({0.0f, 20.0f, 0.0f, 40.0f});
  OpState state;
  KernelCall imported(g.op(onnx), {x_value, dy_value}, at::Device(at::kCPU), state, 1);
  imported.import_gradient = &*layout;
  ASSERT_TRUE(KernelFor(g, onnx, &layout)(imported));
  EXPECT_TRUE(at::equal(imported.outputs[0], expected)) << imported.outputs[0];
  KernelCall tensorflow(g.op(tf), {dy_value, x_value.relu()}, at::Device(at::kCPU), state, 1);
  ASSERT_TRUE(FindKernel("ReluGrad")(tensorflow));
  EXPECT_TRUE(at::equal(tensorflow.outputs[0], expected)) << tensorflow.outputs[0];
}

// The imported CNN's first convolution gradient: its kernel and the layout
// of its operands, as the executor finds them.
struct ConvGradKernel {
  Graph graph = ImportedCnn();
  int32_t op = graph.FindOp("/branch/branch.0/Conv/grad");
  std::optional<ImportGradient> layout;
  KernelFn kernel = op >= 0 ? KernelFor(graph, op, &layout) : nullptr;
  bool found() const { return kernel != nullptr && layout.has_value(); }
};

// The importer's convolution gradient gives torch's autograd gradients.
TEST(ExecImportTest, ConvGradMatchesAutograd) {
  const ConvGradKernel conv;
  ASSERT_TRUE(conv.found());
  ASSERT_EQ(conv.layout->forward_inputs, 3);  // x, w, b
  const at::Tensor x = at::randn({2, 8, 4, 4}).requires_grad_();
  const at::Tensor w = at::randn({8, 4, 3, 3}).requires_grad_();
  const at::Tensor b = at::randn({8}).requires_grad_();
  const at::Tensor dy = at::randn({2, 8, 4, 4});
  at::conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, 2).backward(dy);
  OpState state;
  KernelCall call(conv.graph.op(conv.op), {x.detach(), w.detach(), b.detach(), dy}, at::Device(at::kCPU), state, 1);
  call.import_gradient = &*conv.layout;
  ASSERT_TRUE(conv.kernel(call));
  const std::vector<at::Tensor> expected{x.grad(), w.grad(), b.grad()};
  for (size_t k = 0; k < call.outputs.size(); ++k) {
    EXPECT_TRUE(at::allclose(call.outputs[k], expected[conv.layout->gradient_of[k]], 1e-4, 1e-4)) << "output " << k;
  }
}

// Shapes a kernel cannot read are declined, not a crash: an import
// gradient kernel without its layout, or with operands of other shapes.
TEST(ExecImportTest, KernelsDeclineShapesTheyCannotRead) {
  const ConvGradKernel conv;
  ASSERT_TRUE(conv.found());
  OpState state;
  const at::Device cpu(at::kCPU);
  KernelCall without_layout(conv.graph.op(conv.op), {at::ones({2, 8, 4, 4}), at::ones({8, 4, 3, 3}), at::ones({8}),
                                             at::ones({2, 8, 4, 4})}, cpu, state, 1);
  EXPECT_FALSE(conv.kernel(without_layout));
  KernelCall wrong_shapes(conv.graph.op(conv.op), {at::ones({2, 5, 7}), at::ones({8, 4, 3, 3}), at::ones({8}),
                                           at::ones({3, 3})}, cpu, state, 1);
  wrong_shapes.import_gradient = &*conv.layout;
  EXPECT_FALSE(conv.kernel(wrong_shapes));
  KernelCall too_few(conv.graph.op(conv.op), {}, cpu, state, 1);
  too_few.import_gradient = &*conv.layout;
  EXPECT_FALSE(conv.kernel(too_few));
  // aten's convolution gradient with a weight that does not fit the input.
  const Graph exported = ExportedCnn();
  int32_t conv_backward = -1;
  for (int32_t op = 0; op < exported.num_ops() && conv_backward < 0; ++op) {
    if (exported.op(op).type == "aten.convolution_backward") conv_backward = op;
  }
  ASSERT_GE(conv_backward, 0);
  KernelCall mismatched(exported.op(conv_backward), {at::ones({2, 8, 4, 4}), at::ones({2, 3, 4, 4}),
                                                     at::ones({8, 5, 3, 3})}, cpu, state, 1);
  EXPECT_FALSE(FindKernel("aten.convolution_backward")(mismatched));
}

}  // namespace
}  // namespace devplace
