// Tests of the ONNX importer on small models built here with the ONNX
// protobuf API, so every FLOP and byte can be checked by hand.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <tuple>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "graph/graph_json.h"
#include "import/onnx_einsum.h"
#include "import/onnx_import.h"
#include "onnx/onnx_pb.h"
#include "test_util.h"
#include "util/error.h"

namespace devplace {
namespace {

using testing::TempDir;

onnx::ModelProto NewModel(int64_t ir_version = 7, int64_t opset = 13) {
  onnx::ModelProto model;
  model.set_ir_version(ir_version);
  model.set_producer_name("devplace-test");
  model.add_opset_import()->set_version(opset);
  model.mutable_graph()->set_name("test_model");
  return model;
}

// Dims are numbers or, when not numeric, named dynamic dimensions.
void SetShape(onnx::ValueInfoProto* value, const std::string& name, const std::vector<std::string>& dims) {
  value->set_name(name);
  auto* tensor = value->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tensor->mutable_shape();
  for (const std::string& d : dims) {
    auto* dim = shape->add_dim();
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) {
      dim->set_dim_value(std::stoll(d));
    } else {
      dim->set_dim_param(d);
    }
  }
}

void AddInput(onnx::ModelProto& m, const std::string& name, const std::vector<std::string>& dims) {
  SetShape(m.mutable_graph()->add_input(), name, dims);
}

void AddOutput(onnx::ModelProto& m, const std::string& name) {
  auto* out = m.mutable_graph()->add_output();
  out->set_name(name);
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  // The checker wants a shape; its rank does not matter, the importer infers it.
  out->mutable_type()->mutable_tensor_type()->mutable_shape();
}

// A float weight. As an initializer (zeros), or, as PyTorch writes with
// export_params=False, as a graph input with no data.
void AddWeight(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims, bool as_input = false) {
  if (as_input) {
    std::vector<std::string> text;
    for (int64_t d : dims) text.push_back(std::to_string(d));
    AddInput(m, name, text);
    return;
  }
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  t->set_raw_data(std::string(n * 4, '\0'));
}

onnx::NodeProto* AddNode(onnx::ModelProto& m, const std::string& type, const std::string& name,
                         const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  auto* node = m.mutable_graph()->add_node();
  node->set_op_type(type);
  node->set_name(name);
  for (const auto& i : inputs) node->add_input(i);
  for (const auto& o : outputs) node->add_output(o);
  return node;
}

void SetInts(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void SetInt(onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

// x [batch,3,32,32] -> Conv 3x3 (8 filters, pad 1) -> Relu -> GlobalAveragePool
// -> Flatten -> Gemm to 10. 314 parameters.
onnx::ModelProto SmallCnn(const std::string& batch = "1", bool weights_as_inputs = false) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {batch, "3", "32", "32"});
  AddWeight(m, "conv.weight", {8, 3, 3, 3}, weights_as_inputs);
  AddWeight(m, "conv.bias", {8}, weights_as_inputs);
  AddWeight(m, "fc.weight", {10, 8}, weights_as_inputs);
  AddWeight(m, "fc.bias", {10}, weights_as_inputs);
  auto* conv = AddNode(m, "Conv", "/conv/Conv", {"x", "conv.weight", "conv.bias"}, {"c"});
  SetInts(conv, "kernel_shape", {3, 3});
  SetInts(conv, "pads", {1, 1, 1, 1});
  AddNode(m, "Relu", "/relu/Relu", {"c"}, {"r"});
  AddNode(m, "GlobalAveragePool", "/pool/GlobalAveragePool", {"r"}, {"p"});
  AddNode(m, "Flatten", "/Flatten", {"p"}, {"f"});
  SetInt(AddNode(m, "Gemm", "/fc/Gemm", {"f", "fc.weight", "fc.bias"}, {"y"}), "transB", 1);
  AddOutput(m, "y");
  return m;
}

constexpr double kConvFlops = 2.0 * 8 * 32 * 32 * (3 * 3 * 3) + 8 * 32 * 32;  // products + bias
constexpr double kGemmFlops = 2.0 * 10 * 8 + 10;

std::string Save(const TempDir& dir, const onnx::ModelProto& model, const std::string& name = "model.onnx") {
  std::string bytes;
  model.SerializeToString(&bytes);
  return dir.Write(name, bytes);
}

const Op& OpNamed(const Graph& g, const std::string& name) {
  const int32_t i = g.FindOp(name);
  EXPECT_GE(i, 0) << name;
  return g.op(i >= 0 ? i : 0);
}

TEST(OnnxImportTest, ShapesFlopsAndParametersOfASmallCnn) {
  TempDir dir;
  OnnxImportResult r = ImportOnnxFile(Save(dir, SmallCnn()));
  const Graph& g = r.graph;
  EXPECT_TRUE(r.unknown_shape_tensors.empty());
  EXPECT_TRUE(r.unknown_op_types.empty());
  EXPECT_EQ(r.parameter_count, 8 * 27 + 8 + 80 + 10);
  EXPECT_EQ(r.parameter_bytes, 4 * r.parameter_count);

  const Op& conv = OpNamed(g, "/conv/Conv");
  EXPECT_EQ(conv.type, "Conv");
  EXPECT_EQ(conv.outputs[0].shape, (std::vector<int64_t>{1, 8, 32, 32}));
  EXPECT_EQ(conv.outputs[0].bytes, 8 * 32 * 32 * 4);
  EXPECT_DOUBLE_EQ(conv.flops, kConvFlops);
  EXPECT_DOUBLE_EQ(OpNamed(g, "/fc/Gemm").flops, kGemmFlops);
  EXPECT_EQ(OpNamed(g, "/fc/Gemm").outputs[0].shape, (std::vector<int64_t>{1, 10}));
  EXPECT_DOUBLE_EQ(OpNamed(g, "/Flatten").flops, 0);
  EXPECT_DOUBLE_EQ(OpNamed(g, "/relu/Relu").flops, 8 * 32 * 32);

  // Weights are variables that hold their bytes and share their reader's device.
  const Op& w = OpNamed(g, "conv.weight");
  EXPECT_EQ(w.type, "VariableV2");
  EXPECT_EQ(w.persistent_bytes, 8 * 27 * 4);
  EXPECT_FALSE(w.colocation_group.empty());
  EXPECT_EQ(w.colocation_group, conv.colocation_group);
  EXPECT_EQ(OpNamed(g, "x").type, "Input");
  EXPECT_DOUBLE_EQ(r.forward_flops, g.total_flops());
}

TEST(OnnxImportTest, MatMulFlopsUseTheSharedDimension) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "a", {"2", "4", "5"});
  AddWeight(m, "w", {5, 6});
  AddNode(m, "MatMul", "mm", {"a", "w"}, {"y"});
  AddNode(m, "Softmax", "sm", {"y"}, {"z"});
  AddOutput(m, "z");
  TempDir dir;
  OnnxImportResult r = ImportOnnxFile(Save(dir, m));
  EXPECT_EQ(OpNamed(r.graph, "mm").outputs[0].shape, (std::vector<int64_t>{2, 4, 6}));
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "mm").flops, 2.0 * 2 * 4 * 6 * 5);
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "sm").flops, 5.0 * 48);
  EXPECT_EQ(r.parameter_count, 30);
}

// libonnx infers only an Einsum output's rank: its dims come from the
// equation, so that what follows has known shapes and costs too.
TEST(OnnxImportTest, EinsumShapesComeFromItsEquation) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "a", {"2", "4", "5"});
  AddWeight(m, "w", {5, 6});
  auto* einsum = AddNode(m, "Einsum", "es", {"a", "w"}, {"y"});
  auto* equation = einsum->add_attribute();
  equation->set_name("equation");
  equation->set_type(onnx::AttributeProto::STRING);
  equation->set_s("bij, jk -> bik");
  AddNode(m, "Softmax", "sm", {"y"}, {"z"});
  AddOutput(m, "z");
  TempDir dir;
  OnnxImportResult r = ImportOnnxFile(Save(dir, m));
  EXPECT_EQ(OpNamed(r.graph, "es").outputs[0].shape, (std::vector<int64_t>{2, 4, 6}));
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "es").flops, 2.0 * 2 * 4 * 5 * 6);
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "sm").flops, 5.0 * 48);
  EXPECT_TRUE(r.unknown_shape_tensors.empty());

  using Dims = std::vector<std::vector<int64_t>>;
  // Implicit output: the ellipsis, then the labels seen once, sorted.
  std::optional<EinsumResult> implicit = EvaluateEinsum("...ij,jk", Dims{{3, 2, 4, 5}, {5, 6}});
  ASSERT_TRUE(implicit);
  EXPECT_EQ(implicit->output_dims, (std::vector<int64_t>{3, 2, 4, 6}));
  // Size-1 labels broadcast; a reduction to a scalar.
  EXPECT_EQ(EvaluateEinsum("ij,ij->i", Dims{{3, 1}, {3, 7}})->output_dims, (std::vector<int64_t>{3}));
  EXPECT_EQ(EvaluateEinsum("ii->", Dims{{4, 4}})->output_dims, (std::vector<int64_t>{}));
  // Malformed or not fitting the shapes: left unknown, never guessed.
  for (const auto& [text, dims] : std::vector<std::pair<std::string, Dims>>{
           {"ij,jk", Dims{{2, 3}}}, {"ij", Dims{{2, 3, 4}}}, {"ij,jk->ik", Dims{{2, 3}, {4, 5}}}, {"ij->iz", Dims{{2, 3}}},
           {"i.j", Dims{{2, 3}}}, {"......i", Dims{{2}}}, {"ij->ii", Dims{{2, 2}}}, {"ij", Dims{{2, -1}}}}) {
    EXPECT_FALSE(EvaluateEinsum(text, dims)) << text;
  }
}

// An int64 Constant node: a scalar, or a vector of `values`.
void AddIntConstant(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& values,
                    bool scalar = true) {
  auto* node = AddNode(m, "Constant", name, {}, {name});
  auto* a = node->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) a->mutable_t()->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) a->mutable_t()->add_int64_data(v);
}

// A product whose operands do not fit (a model, or a --dim value, that is
// wrong): libonnx's inference lets it pass, and it was costed from one
// side. Now an error naming the node.
TEST(OnnxImportTest, ProductsWhoseOperandsDoNotFitAreErrors) {
  TempDir dir;
  onnx::ModelProto matmul = NewModel();
  AddInput(matmul, "a", {"2", "4", "5"});
  AddWeight(matmul, "w", {6, 3});
  AddNode(matmul, "MatMul", "mm", {"a", "w"}, {"y"});
  AddOutput(matmul, "y");
  onnx::ModelProto gemm = NewModel();
  AddInput(gemm, "x", {"2", "7"});
  AddWeight(gemm, "w", {3, 1});
  SetInt(AddNode(gemm, "Gemm", "fc", {"x", "w"}, {"y"}), "transB", 1);
  AddOutput(gemm, "y");
  onnx::ModelProto conv = NewModel();
  AddInput(conv, "x", {"1", "3", "8", "8"});
  AddWeight(conv, "w", {4, 2, 3, 3});
  AddNode(conv, "Conv", "conv", {"x", "w"}, {"y"});
  AddOutput(conv, "y");
  // Exported with its batch of 2 baked into a Reshape, imported with
  // --batch 3: the rest of the model ran at batch 2, silently.
  onnx::ModelProto reshape = NewModel();
  AddInput(reshape, "x", {"2", "12"});
  AddIntConstant(reshape, "fixed", {2, 3, 4}, /*scalar=*/false);
  AddNode(reshape, "Reshape", "heads", {"x", "fixed"}, {"y"});
  AddOutput(reshape, "y");
  // Element-wise operands that do not broadcast; ones that do import.
  onnx::ModelProto add = NewModel();
  AddInput(add, "a", {"2", "3"});
  AddWeight(add, "b", {4, 3});
  AddNode(add, "Add", "sum", {"a", "b"}, {"y"});
  AddOutput(add, "y");
  onnx::ModelProto where = NewModel();
  AddInput(where, "c", {"2", "1"});
  AddInput(where, "x", {"2", "3"});
  AddWeight(where, "w", {5});
  AddNode(where, "Where", "pick", {"c", "x", "w"}, {"y"});
  AddOutput(where, "y");
  onnx::ModelProto fits = NewModel();
  AddInput(fits, "a", {"2", "1", "3"});
  AddInput(fits, "b", {"batch", "4", "1"});
  AddWeight(fits, "c", {3});
  AddNode(fits, "Mul", "scale", {"a", "b"}, {"ab"});
  AddNode(fits, "Sum", "total", {"ab", "c", "a"}, {"y"});
  AddOutput(fits, "y");
  OnnxImportOptions batch2;
  batch2.batch = 2;
  EXPECT_EQ(OpNamed(ImportOnnxFile(Save(dir, fits), batch2).graph, "total").outputs[0].shape, (std::vector<int64_t>{2, 4, 3}));
  OnnxImportOptions batch3;
  batch3.batch = 3;
  EXPECT_EQ(OpNamed(ImportOnnxFile(Save(dir, reshape)).graph, "heads").outputs[0].shape, (std::vector<int64_t>{2, 3, 4}));
  try {
    ImportOnnxFile(Save(dir, reshape), batch3);
    ADD_FAILURE() << "expected an error for the Reshape";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'heads' (Reshape): its input has 36 elements and its output 24"), std::string::npos)
        << e.what();
  }
  for (const auto& [model, named] : std::vector<std::pair<onnx::ModelProto, std::string>>{
           {matmul, "'mm' (MatMul): the inner dimensions 5 and 6 differ"},
           {gemm, "'fc' (Gemm): the inner dimensions 7 and 1 differ"},
           {conv, "'conv' (Conv): the input's channels and the weight's (times group) 3 and 2 differ"},
           {add, "'sum' (Add): its operands' shapes [2, 3] and [4, 3] do not broadcast"},
           {where, "'pick' (Where): its operands' shapes [2, 1] and [2, 3] and [5] do not broadcast"}}) {
    try {
      ImportOnnxFile(Save(dir, model));
      ADD_FAILURE() << "expected an error: " << named;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
}

TEST(OnnxImportTest, NormalizationPoolingAndRecurrentFlops) {
  onnx::ModelProto m = NewModel(8, 17);
  AddInput(m, "x", {"2", "4", "6", "6"});
  for (const char* w : {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}) AddWeight(m, w, {4});
  AddNode(m, "BatchNormalization", "bn", {"x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, {"b"});
  auto* pool = AddNode(m, "MaxPool", "pool", {"b"}, {"p"});
  SetInts(pool, "kernel_shape", {2, 2});
  SetInts(pool, "strides", {2, 2});
  AddWeight(m, "ln.weight", {3});
  AddWeight(m, "ln.bias", {3});
  AddNode(m, "LayerNormalization", "ln", {"p", "ln.weight", "ln.bias"}, {"l"});
  AddOutput(m, "l");
  // An LSTM over 5 steps, batch 2, input 3, hidden 4: W [1,16,3], R [1,16,4].
  AddInput(m, "seq", {"5", "2", "3"});
  AddWeight(m, "lstm.W", {1, 16, 3});
  AddWeight(m, "lstm.R", {1, 16, 4});
  SetInt(AddNode(m, "LSTM", "lstm", {"seq", "lstm.W", "lstm.R"}, {"h"}), "hidden_size", 4);
  AddOutput(m, "h");
  TempDir dir;
  OnnxImportResult r = ImportOnnxFile(Save(dir, m));
  EXPECT_TRUE(r.unknown_shape_tensors.empty());
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "bn").flops, 2.0 * 2 * 4 * 6 * 6);
  EXPECT_EQ(OpNamed(r.graph, "pool").outputs[0].shape, (std::vector<int64_t>{2, 4, 3, 3}));
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "pool").flops, 2.0 * 4 * 3 * 3 * 4);
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "ln").flops, 8.0 * 2 * 4 * 3 * 3);
  EXPECT_EQ(OpNamed(r.graph, "lstm").outputs[0].shape, (std::vector<int64_t>{5, 1, 2, 4}));
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "lstm").flops, 5 * 2 * (2.0 * (16 * 3 + 16 * 4) + 12 * 4));
  // Running statistics are buffers, not parameters.
  EXPECT_EQ(r.parameter_count, 4 + 4 + 3 + 3 + 48 + 64);
  EXPECT_EQ(r.buffer_bytes, 2 * 4 * 4);
  EXPECT_EQ(OpNamed(r.graph, "bn.running_mean").type, "Const");
}

TEST(OnnxImportTest, WeightsExportedAsInputsAreParameters) {
  TempDir dir;
  OnnxImportResult r = ImportOnnxFile(Save(dir, SmallCnn("1", /*weights_as_inputs=*/true)));
  EXPECT_EQ(r.parameter_count, 314);
  EXPECT_EQ(OpNamed(r.graph, "fc.weight").type, "VariableV2");
  EXPECT_EQ(OpNamed(r.graph, "x").type, "Input");
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "/conv/Conv").flops, kConvFlops);
}

TEST(OnnxImportTest, DynamicDimensionsNeedValues) {
  TempDir dir;
  const std::string path = Save(dir, SmallCnn("batch_size"));
  try {
    ImportOnnxFile(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("batch_size"), std::string::npos) << message;
    EXPECT_NE(message.find("--dim"), std::string::npos) << message;
    EXPECT_NE(message.find(path), std::string::npos) << message;
  }
  OnnxImportOptions named;
  named.dims["batch_size"] = 4;
  OnnxImportResult r = ImportOnnxFile(path, named);
  EXPECT_EQ(OpNamed(r.graph, "/conv/Conv").outputs[0].shape[0], 4);
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "/conv/Conv").flops, 4 * kConvFlops);
  EXPECT_EQ(OpNamed(r.graph, "/fc/Gemm").outputs[0].shape, (std::vector<int64_t>{4, 10}));

  OnnxImportOptions batch;
  batch.batch = 2;
  OnnxImportResult b = ImportOnnxFile(path, batch);
  EXPECT_DOUBLE_EQ(OpNamed(b.graph, "/fc/Gemm").flops, 2 * kGemmFlops);
  EXPECT_EQ(b.parameter_count, 314);  // the batch does not touch the weights
}

TEST(OnnxImportTest, UnknownOpsGetASizeBasedCostAndOneWarning) {
  onnx::ModelProto m = NewModel();
  auto* custom = m.add_opset_import();
  custom->set_domain("com.example");
  custom->set_version(1);
  AddInput(m, "x", {"2", "8"});
  AddNode(m, "Relu", "relu", {"x"}, {"r"});
  AddNode(m, "FancyOp", "fancy", {"r"}, {"f"})->set_domain("com.example");
  AddNode(m, "MyCustomOp", "custom", {"f"}, {"y"});
  AddOutput(m, "y");
  TempDir dir;
  const std::string path = Save(dir, m);
  OnnxImportResult r = ImportOnnxFile(path);
  EXPECT_EQ(r.unknown_op_types, (std::vector<std::string>{"FancyOp", "MyCustomOp"}));
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "fancy").flops, 16);  // its 16 input elements; its output shape is unknown
  const std::string warning = OnnxImportWarning(path, r);
  EXPECT_EQ(warning.rfind("warning: ", 0), 0u) << warning;
  EXPECT_EQ(warning.find('\n'), std::string::npos);
  EXPECT_NE(warning.find("FancyOp, MyCustomOp"), std::string::npos) << warning;
}

TEST(OnnxImportTest, NewerModelsSkipTheCheckerButStillInferShapes) {
  onnx::ModelProto m = SmallCnn();
  m.set_ir_version(99);
  m.mutable_opset_import(0)->set_version(99);
  TempDir dir;
  OnnxImportResult r = ImportOnnxFile(Save(dir, m));
  EXPECT_TRUE(r.checker_skipped);
  EXPECT_TRUE(r.unknown_shape_tensors.empty());
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "/conv/Conv").flops, kConvFlops);
  EXPECT_FALSE(ImportOnnxFile(Save(dir, SmallCnn(), "old.onnx")).checker_skipped);
}

void ExpectError(const std::string& path, const std::string& must_mention) {
  try {
    ImportOnnxFile(path);
    FAIL() << "expected an error for " << path;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(must_mention), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(OnnxImportTest, BadFilesGiveClearErrors) {
  TempDir dir;
  std::string bytes;
  SmallCnn().SerializeToString(&bytes);
  ExpectError(dir.Write("empty.onnx", ""), "is empty");
  ExpectError(dir.Write("truncated.onnx", bytes.substr(0, bytes.size() / 2)), "truncated");
  ExpectError(dir.Write("text.onnx", "{\"format\": \"devplace-graph\", \"version\": 1}\n"), "not");
  ExpectError(dir.File("missing.onnx"), "does not exist");
}

TEST(OnnxImportTest, TrainingAddsColocatedBackwardOpsAndUpdates) {
  TempDir dir;
  OnnxImportOptions options;
  options.training = true;
  OnnxImportResult r = ImportOnnxFile(Save(dir, SmallCnn()), options);
  const Graph& g = r.graph;
  const Op& conv = OpNamed(g, "/conv/Conv");
  const Op& conv_grad = OpNamed(g, "/conv/Conv/grad");
  EXPECT_EQ(conv_grad.phase, Phase::kBackward);
  EXPECT_EQ(conv_grad.colocation_group, conv.colocation_group);
  // The input needs no gradient: only the weight's product, once.
  EXPECT_DOUBLE_EQ(conv_grad.flops, conv.flops);
  // The Gemm's input does: two products.
  EXPECT_DOUBLE_EQ(OpNamed(g, "/fc/Gemm/grad").flops, 2 * OpNamed(g, "/fc/Gemm").flops);
  EXPECT_EQ(OpNamed(g, "/relu/Relu/grad").colocation_group, OpNamed(g, "/relu/Relu").colocation_group);
  // The conv's gradient keeps its input alive: it reads it.
  bool reads_input = false;
  for (int32_t e : g.in_data_edges(g.FindOp("/conv/Conv/grad"))) reads_input |= g.data_edges()[e].src == g.FindOp("x");
  EXPECT_TRUE(reads_input);

  int updates = 0;
  for (const char* w : {"conv.weight", "conv.bias", "fc.weight", "fc.bias"}) {
    const Op& update = OpNamed(g, std::string(w) + "/update");
    EXPECT_EQ(update.phase, Phase::kUpdate);
    EXPECT_EQ(update.colocation_group, OpNamed(g, w).colocation_group);
    ++updates;
  }
  EXPECT_EQ(updates, 4);
  // Adam keeps two slots beside each parameter.
  EXPECT_EQ(OpNamed(g, "conv.weight").persistent_bytes, 3 * 8 * 27 * 4);
  EXPECT_EQ(r.parameter_count, 314);
  EXPECT_LT(g.FindOp("x/grad"), 0);  // data inputs get no gradient
}

// The program: devplace import, and .onnx files wherever a graph goes.
std::pair<int, std::string> Devplace(const std::string& args) {
  std::string command = std::string(DEVPLACE_BINARY) + " " + args + " 2>&1";
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return {-1, ""};
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// ---- Hostile models: each class of defect gives an Error, never a signal. ----

// An int64 scalar or vector as a Constant node.

// x [6] reshaped by a shape computed as Concat(Unsqueeze(op(a, b)), [-1]).
onnx::ModelProto ReshapeByArithmetic(const std::string& op, int64_t a, int64_t b) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {"6"});
  AddIntConstant(m, "a", {a});
  AddIntConstant(m, "b", {b});
  AddIntConstant(m, "axes", {0}, /*scalar=*/false);
  AddIntConstant(m, "rest", {-1}, /*scalar=*/false);
  AddNode(m, op, "arith", {"a", "b"}, {"c"});
  AddNode(m, "Unsqueeze", "unsq", {"c", "axes"}, {"c1"});
  AddNode(m, "Concat", "cat", {"c1", "rest"}, {"shape"});
  SetInt(m.mutable_graph()->mutable_node(6), "axis", 0);
  AddNode(m, "Reshape", "reshape", {"x", "shape"}, {"y"});
  AddOutput(m, "y");
  return m;
}

std::string ErrorOf(const std::string& path, const OnnxImportOptions& options = {}) {
  try {
    ImportOnnxFile(path, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// An error naming the file and `must_mention`, on one line.
void ExpectImportError(const std::string& path, const std::vector<std::string>& must_mention) {
  const std::string message = ErrorOf(path);
  ASSERT_FALSE(message.empty()) << "expected an error for " << path;
  EXPECT_NE(message.find(path), std::string::npos) << message;
  for (const auto& m : must_mention) EXPECT_NE(message.find(m), std::string::npos) << m << " in: " << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(OnnxHostileTest, IntegerFoldingNeverTrapsOrOverflows) {
  TempDir dir;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // What cannot be computed (INT64_MIN / -1 traps, x / 0, overflowing
  // products and sums) stays unfolded: the node is still in the graph.
  for (const auto& [op, a, b] : std::vector<std::tuple<std::string, int64_t, int64_t>>{
           {"Div", kMin, -1}, {"Div", 5, 0}, {"Mod", 5, 0}, {"Mul", kMax, 2}, {"Add", kMax, 1}, {"Sub", kMin, 1}}) {
    SCOPED_TRACE(op + " " + std::to_string(a) + " " + std::to_string(b));
    const std::string path = Save(dir, ReshapeByArithmetic(op, a, b), op + ".onnx");
    try {
      OnnxImportResult r = ImportOnnxFile(path);
      EXPECT_GE(r.graph.FindOp("arith"), 0);
      EXPECT_FALSE(r.unknown_shape_tensors.empty());
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  // Mod takes the divisor's sign (fmod=0): -7 mod 3 = 2, so [6] -> [2, 3].
  auto folded_shape = [&](const std::string& op, int64_t a, int64_t b) {
    OnnxImportResult r = ImportOnnxFile(Save(dir, ReshapeByArithmetic(op, a, b), "ok.onnx"));
    EXPECT_LT(r.graph.FindOp("arith"), 0) << op << " was not folded";
    return OpNamed(r.graph, "reshape").outputs[0].shape;
  };
  EXPECT_EQ(folded_shape("Mod", -7, 3), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(folded_shape("Div", -6, -2), (std::vector<int64_t>{3, 2}));
  // INT64_MIN % -1 is 0 without a trap; Reshape's 0 copies x's dimension.
  EXPECT_EQ(folded_shape("Mod", kMin, -1), (std::vector<int64_t>{6, 1}));
}

// torch.onnx writes token.expand(batch, -1, -1) (ViT's class token) as
// Expand(token, Where(Equal(shape, -1 x ones), ones, shape)) over a
// reshaped Concat: folded, the Expand's output and what follows have known
// shapes (they were unknown, counted as 0 bytes).
TEST(OnnxImportTest, ExpandByAShapeWithMinusOnesIsFolded) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {"2", "5", "4"});
  AddWeight(m, "token", {1, 1, 4});
  AddNode(m, "Shape", "shape_x", {"x"}, {"sx"});
  AddIntConstant(m, "zero", {0});
  SetInt(AddNode(m, "Gather", "batch", {"sx", "zero"}, {"b"}), "axis", 0);
  AddIntConstant(m, "axes", {0}, /*scalar=*/false);
  AddNode(m, "Unsqueeze", "batch1", {"b", "axes"}, {"b1"});
  AddIntConstant(m, "minus_one", {-1}, /*scalar=*/false);
  SetInt(AddNode(m, "Concat", "cat", {"b1", "minus_one", "minus_one"}, {"wanted"}), "axis", 0);
  AddNode(m, "Reshape", "flat", {"wanted", "minus_one"}, {"shape"});
  AddNode(m, "Shape", "rank", {"shape"}, {"r"});
  auto* ones = AddNode(m, "ConstantOfShape", "ones", {"r"}, {"one"});
  auto* value = ones->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_int64_data(1);
  AddIntConstant(m, "neg", {-1});
  AddNode(m, "Mul", "negs", {"one", "neg"}, {"minus_ones"});
  AddNode(m, "Equal", "is_minus", {"shape", "minus_ones"}, {"eq"});
  AddNode(m, "Where", "resolved", {"eq", "one", "shape"}, {"target"});
  AddNode(m, "Expand", "expand", {"token", "target"}, {"tokens"});
  SetInt(AddNode(m, "Concat", "join", {"tokens", "x"}, {"y"}), "axis", 1);
  AddOutput(m, "y");
  TempDir dir;
  OnnxImportResult r = ImportOnnxFile(Save(dir, m));
  EXPECT_TRUE(r.unknown_shape_tensors.empty());
  EXPECT_EQ(OpNamed(r.graph, "expand").outputs[0].shape, (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(OpNamed(r.graph, "join").outputs[0].shape, (std::vector<int64_t>{2, 6, 4}));
}

// A weight read only inside a Loop's body (torch.jit.script's loops) is a
// parameter, read by the Loop: it had no variable op, no update and no
// memory (PyTorch counted 1188 parameters, the import 132).
TEST(OnnxImportTest, WeightsReadOnlyInsideALoopBodyAreParametersOfTheLoop) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {"2", "4"});
  AddWeight(m, "cell.weight", {4, 4});
  AddIntConstant(m, "trips", {3});
  auto* cond = AddNode(m, "Constant", "go", {}, {"go"});
  auto* value = cond->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  value->mutable_t()->add_int32_data(1);
  auto* loop = AddNode(m, "Loop", "loop", {"trips", "go", "x"}, {"y"});
  auto* body_attribute = loop->add_attribute();
  body_attribute->set_name("body");
  body_attribute->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* body = body_attribute->mutable_g();
  body->set_name("body");
  auto typed = [](onnx::ValueInfoProto* v, const std::string& name, int32_t type) {
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    v->mutable_type()->mutable_tensor_type()->mutable_shape();
  };
  typed(body->add_input(), "i", onnx::TensorProto::INT64);
  typed(body->add_input(), "c_in", onnx::TensorProto::BOOL);
  SetShape(body->add_input(), "v_in", {"2", "4"});
  auto* mm = body->add_node();
  mm->set_op_type("MatMul");
  mm->set_name("step");
  mm->add_input("v_in");
  mm->add_input("cell.weight");
  mm->add_output("v_out");
  auto* keep = body->add_node();
  keep->set_op_type("Identity");
  keep->set_name("keep");
  keep->add_input("c_in");
  keep->add_output("c_out");
  typed(body->add_output(), "c_out", onnx::TensorProto::BOOL);
  SetShape(body->add_output(), "v_out", {"2", "4"});
  AddOutput(m, "y");
  TempDir dir;
  OnnxImportOptions options;
  options.training = true;
  OnnxImportResult r = ImportOnnxFile(Save(dir, m), options);
  EXPECT_EQ(r.parameter_count, 16);
  const Graph& g = r.graph;
  const int32_t weight = g.FindOp("cell.weight");
  ASSERT_GE(weight, 0);
  EXPECT_EQ(g.op(weight).type, "VariableV2");
  bool read_by_loop = false;
  for (int32_t e : g.out_data_edges(weight)) read_by_loop |= g.data_edges()[e].dst == g.FindOp("loop");
  EXPECT_TRUE(read_by_loop);
  EXPECT_EQ(g.op(weight).colocation_group, OpNamed(g, "loop").colocation_group);
  EXPECT_FALSE(g.op(weight).colocation_group.empty());
}

// A Loop, Scan or If is costed by its bodies: a Loop's body times its
// constant trip count, a Scan's times its length, an If's dearer branch;
// before, a scripted RNN's whole recurrence was one op costed at one FLOP
// per element of its tensors. A trip count that is not a constant is
// counted once, and the warning says so.
namespace control_flow {

void Typed(onnx::ValueInfoProto* v, const std::string& name, int32_t type) {
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(type);
  v->mutable_type()->mutable_tensor_type()->mutable_shape();
}

onnx::GraphProto* Body(onnx::NodeProto* node, const std::string& attribute) {
  auto* a = node->add_attribute();
  a->set_name(attribute);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(attribute);
  return a->mutable_g();
}

onnx::NodeProto* BodyNode(onnx::GraphProto* body, const std::string& type, const std::string& name,
                          const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  auto* node = body->add_node();
  node->set_op_type(type);
  node->set_name(name);
  for (const auto& i : inputs) node->add_input(i);
  for (const auto& o : outputs) node->add_output(o);
  return node;
}

void AddTrue(onnx::ModelProto& m, const std::string& name) {
  auto* cond = AddNode(m, "Constant", name, {}, {name});
  auto* value = cond->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  value->mutable_t()->add_int32_data(1);
}

// Fills a Loop body that multiplies the [2, 4] state by the [4, 4] weight
// "w" once per iteration (64 FLOPs); `inner_trips`, when given, wraps that
// product in a Loop of its own with that trip count.
void FillStepBody(onnx::GraphProto* body, const std::string& tag, const std::string& inner_trips = "") {
  Typed(body->add_input(), tag + "_i", onnx::TensorProto::INT64);
  Typed(body->add_input(), tag + "_c_in", onnx::TensorProto::BOOL);
  SetShape(body->add_input(), tag + "_v_in", {"2", "4"});
  BodyNode(body, "Identity", tag + "_keep", {tag + "_c_in"}, {tag + "_c_out"});
  if (inner_trips.empty()) {
    BodyNode(body, "MatMul", tag + "_step", {tag + "_v_in", "w"}, {tag + "_v_out"});
  } else {
    auto* inner = BodyNode(body, "Loop", tag + "_inner", {inner_trips, tag + "_c_in", tag + "_v_in"}, {tag + "_v_out"});
    FillStepBody(Body(inner, "body"), tag + "_inner");
  }
  Typed(body->add_output(), tag + "_c_out", onnx::TensorProto::BOOL);
  SetShape(body->add_output(), tag + "_v_out", {"2", "4"});
}

// x [2, 4] through a Loop named "loop" with trip count `trips` (a tensor
// name; "" for none).
onnx::ModelProto LoopModel(const std::string& trips, const std::string& inner_trips = "") {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {"2", "4"});
  AddWeight(m, "w", {4, 4});
  AddTrue(m, "go");
  auto* loop = AddNode(m, "Loop", "loop", {trips, "go", "x"}, {"y"});
  FillStepBody(Body(loop, "body"), "b", inner_trips);
  AddOutput(m, "y");
  return m;
}

}  // namespace control_flow

TEST(OnnxImportTest, ControlFlowIsCostedByItsBodies) {
  using namespace control_flow;
  constexpr double kStep = 2.0 * 2 * 4 * 4;  // one [2, 4] x [4, 4] MatMul
  TempDir dir;
  auto import = [&dir](onnx::ModelProto m, const std::string& name, bool training = false) {
    OnnxImportOptions options;
    options.training = training;
    return ImportOnnxFile(Save(dir, m, name), options);
  };
  {
    onnx::ModelProto m = LoopModel("trips");
    AddIntConstant(m, "trips", {3});
    std::rotate(m.mutable_graph()->mutable_node()->rbegin(), m.mutable_graph()->mutable_node()->rbegin() + 1,
                m.mutable_graph()->mutable_node()->rend());  // the constant first
    const OnnxImportResult r = import(m, "constant.onnx");
    EXPECT_DOUBLE_EQ(OpNamed(r.graph, "loop").flops, 3 * kStep);
    EXPECT_TRUE(r.uncounted_loops.empty());
    // The body gives back the state's shape, so the final state has it
    // (libonnx's inference leaves it unknown: 0 bytes, and whatever reads
    // it unshaped).
    EXPECT_EQ(OpNamed(r.graph, "loop").outputs[0].shape, (std::vector<int64_t>{2, 4}));
    EXPECT_TRUE(r.unknown_shape_tensors.empty());
    EXPECT_TRUE(r.unknown_op_types.empty());
    EXPECT_EQ(OnnxImportWarning("constant.onnx", r).find("loops"), std::string::npos);
    EXPECT_EQ(OnnxImportWarning("constant.onnx", r).find("unknown op types"), std::string::npos);
    // Its gradient is costed as a product's: one product per step for the
    // weight's gradient, and one more where its input needs a gradient
    // too (here, when that input is itself a product with a weight).
    EXPECT_DOUBLE_EQ(OpNamed(import(m, "constant.onnx", true).graph, "loop/grad").flops, 3 * kStep);
    AddWeight(m, "w0", {4, 4});
    auto* nodes = m.mutable_graph()->mutable_node();
    for (auto& node : *nodes) {
      if (node.op_type() == "Loop") node.set_input(2, "xw");
    }
    AddNode(m, "MatMul", "pre", {"x", "w0"}, {"xw"});
    std::rotate(nodes->rbegin(), nodes->rbegin() + 1, nodes->rend());
    EXPECT_DOUBLE_EQ(OpNamed(import(m, "pre.onnx", true).graph, "loop/grad").flops, 2 * 3 * kStep);
  }
  {
    // A trip count read from the input, and PyTorch's `while`: INT64_MAX.
    onnx::ModelProto from_input = LoopModel("n");
    control_flow::Typed(from_input.mutable_graph()->add_input(), "n", onnx::TensorProto::INT64);
    onnx::ModelProto unbounded = LoopModel("forever");
    AddIntConstant(unbounded, "forever", {std::numeric_limits<int64_t>::max()});
    std::rotate(unbounded.mutable_graph()->mutable_node()->rbegin(), unbounded.mutable_graph()->mutable_node()->rbegin() + 1,
                unbounded.mutable_graph()->mutable_node()->rend());
    for (auto& [model, name] : {std::pair{from_input, "input.onnx"}, std::pair{unbounded, "while.onnx"}}) {
      const OnnxImportResult r = import(model, name);
      EXPECT_DOUBLE_EQ(OpNamed(r.graph, "loop").flops, kStep) << name;
      EXPECT_EQ(r.uncounted_loops, std::vector<std::string>{"loop"}) << name;
      EXPECT_NE(OnnxImportWarning(name, r).find("loops whose trip count is not a constant costed for one iteration: loop"),
                std::string::npos)
          << OnnxImportWarning(name, r);
    }
  }
  {
    // Nested: 2 outer trips of 3 inner ones, the inner count from the
    // outer scope.
    onnx::ModelProto m = LoopModel("outer_trips", "inner_trips");
    AddIntConstant(m, "outer_trips", {2});
    AddIntConstant(m, "inner_trips", {3});
    auto* nodes = m.mutable_graph()->mutable_node();
    std::rotate(nodes->rbegin(), nodes->rbegin() + 2, nodes->rend());
    const OnnxImportResult r = import(m, "nested.onnx");
    EXPECT_DOUBLE_EQ(OpNamed(r.graph, "loop").flops, 2 * 3 * kStep);
    EXPECT_TRUE(r.uncounted_loops.empty());
  }
  {
    // A state whose shape changes (the body widens [2, 4] to [2, 8]) stays
    // unknown: no iteration count fixes it.
    onnx::ModelProto m = LoopModel("trips");
    AddIntConstant(m, "trips", {3});
    std::rotate(m.mutable_graph()->mutable_node()->rbegin(), m.mutable_graph()->mutable_node()->rbegin() + 1,
                m.mutable_graph()->mutable_node()->rend());
    AddWeight(m, "wide", {4, 8});
    onnx::GraphProto* body = nullptr;
    for (auto& node : *m.mutable_graph()->mutable_node()) {
      if (node.op_type() == "Loop") body = node.mutable_attribute(0)->mutable_g();
    }
    ASSERT_NE(body, nullptr);
    for (auto& node : *body->mutable_node()) {
      if (node.op_type() == "MatMul") node.set_input(1, "wide");
    }
    SetShape(body->mutable_output(1), "b_v_out", {"2", "8"});
    const OnnxImportResult r = import(m, "widening.onnx");
    EXPECT_EQ(r.unknown_shape_tensors, std::vector<std::string>{"y"});
  }
  {
    // If: the dearer branch (a product against a copy).
    onnx::ModelProto m = NewModel();
    AddInput(m, "x", {"2", "4"});
    AddWeight(m, "w", {4, 4});
    AddTrue(m, "go");
    auto* branch = AddNode(m, "If", "choose", {"go"}, {"y"});
    onnx::GraphProto* then_branch = Body(branch, "then_branch");
    BodyNode(then_branch, "MatMul", "product", {"x", "w"}, {"then_y"});
    SetShape(then_branch->add_output(), "then_y", {"2", "4"});
    onnx::GraphProto* else_branch = Body(branch, "else_branch");
    BodyNode(else_branch, "Identity", "copy", {"x"}, {"else_y"});
    SetShape(else_branch->add_output(), "else_y", {"2", "4"});
    AddOutput(m, "y");
    const OnnxImportResult r = import(m, "if.onnx");
    EXPECT_DOUBLE_EQ(OpNamed(r.graph, "choose").flops, kStep);
  }
  {
    // Scan over 5 slices of xs [5, 2, 4]: per slice a product and an add
    // (8 FLOPs) whose operand is a body tensor only inference shapes.
    onnx::ModelProto m = NewModel();
    AddInput(m, "h0", {"2", "4"});
    AddInput(m, "xs", {"5", "2", "4"});
    AddWeight(m, "w", {4, 4});
    auto* scan = AddNode(m, "Scan", "scan", {"h0", "xs"}, {"h"});
    SetInt(scan, "num_scan_inputs", 1);
    onnx::GraphProto* body = Body(scan, "body");
    SetShape(body->add_input(), "h_in", {"2", "4"});
    SetShape(body->add_input(), "x_t", {"2", "4"});
    BodyNode(body, "MatMul", "recur", {"h_in", "w"}, {"hw"});
    BodyNode(body, "Add", "mix", {"hw", "x_t"}, {"h_out"});
    SetShape(body->add_output(), "h_out", {"2", "4"});
    AddOutput(m, "h");
    const OnnxImportResult r = import(m, "scan.onnx");
    EXPECT_DOUBLE_EQ(OpNamed(r.graph, "scan").flops, 5 * (kStep + 8));
    EXPECT_TRUE(r.uncounted_loops.empty());
  }
}

// --batch and a --dim for the same dimension must agree: they gave the
// first dims one value and the dim's other uses the other, silently. A
// command without --dim (compare, place on a .onnx) says to import first.
TEST(OnnxImportTest, BatchAndDimForOneDimensionMustAgree) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {"batch", "4"});
  AddInput(m, "mix", {"batch", "batch"});
  AddNode(m, "MatMul", "mm", {"mix", "x"}, {"y"});
  AddOutput(m, "y");
  TempDir dir;
  const std::string path = Save(dir, m);
  OnnxImportOptions options;
  options.batch = 2;
  options.dims = {{"batch", 4}};
  try {
    ImportOnnxFile(path, options);
    ADD_FAILURE() << "expected --batch and --dim to disagree";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--batch 2 and --dim batch=4 disagree"), std::string::npos) << e.what();
  }
  options.dims = {{"batch", 2}};
  const OnnxImportResult agreed = ImportOnnxFile(path, options);
  EXPECT_EQ(OpNamed(agreed.graph, "mix").outputs[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(OpNamed(agreed.graph, "mm").outputs[0].shape, (std::vector<int64_t>{2, 4}));
  OnnxImportOptions no_flags;
  no_flags.takes_dim_flags = false;
  try {
    ImportOnnxFile(path, no_flags);
    ADD_FAILURE() << "expected an error naming the dynamic dimension";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no value: batch; import it first: devplace import"), std::string::npos) << e.what();
  }
}

// torch.onnx writes F.pad(x, (1, 1, 2, 2)) (and every padding module) as
// Pad(x, Cast(Reshape(Transpose(Slice(Reshape(Concat(pads, zeros), [-1, 2]),
// -1, -big, axis 0, step -1)), [-1]))): the amounts flipped row-wise, then
// read column-wise. Unfolded, the Pad and everything after it had unknown
// shapes, and the Conv after it cost 0 FLOPs (a CycleGAN imported at 0
// forward FLOPs); so did the opset 9 Slice, whose bounds are attributes.
TEST(OnnxImportTest, TorchPaddingArithmeticIsFolded) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {"1", "3", "8", "8"});
  AddWeight(m, "w", {4, 3, 3, 3});
  AddIntConstant(m, "pads_torch", {1, 1, 2, 2}, /*scalar=*/false);
  AddIntConstant(m, "zeros", {0, 0, 0, 0}, /*scalar=*/false);
  SetInt(AddNode(m, "Concat", "cat", {"pads_torch", "zeros"}, {"all"}), "axis", 0);
  AddIntConstant(m, "table_shape", {-1, 2}, /*scalar=*/false);
  AddNode(m, "Reshape", "table", {"all", "table_shape"}, {"rows"});
  AddIntConstant(m, "start", {-1}, /*scalar=*/false);
  AddIntConstant(m, "end", {-std::numeric_limits<int64_t>::max()}, /*scalar=*/false);
  AddIntConstant(m, "axis", {0}, /*scalar=*/false);
  AddIntConstant(m, "step", {-1}, /*scalar=*/false);
  AddNode(m, "Slice", "flip", {"rows", "start", "end", "axis", "step"}, {"flipped"});
  SetInts(AddNode(m, "Transpose", "columns", {"flipped"}, {"cols"}), "perm", {1, 0});
  AddIntConstant(m, "flat_shape", {-1}, /*scalar=*/false);
  AddNode(m, "Reshape", "flat", {"cols", "flat_shape"}, {"pads_flat"});
  SetInt(AddNode(m, "Cast", "cast", {"pads_flat"}, {"pads"}), "to", onnx::TensorProto::INT64);
  AddNode(m, "Pad", "pad", {"x", "pads"}, {"padded"});
  AddNode(m, "Conv", "conv", {"padded", "w"}, {"y"});
  AddOutput(m, "y");
  TempDir dir;
  OnnxImportResult r = ImportOnnxFile(Save(dir, m));
  EXPECT_TRUE(r.unknown_shape_tensors.empty());
  // ONNX's pads: [x1_begin, x2_begin, ..., x1_end, ...] = [0, 0, 2, 1, 0, 0, 2, 1].
  EXPECT_EQ(OpNamed(r.graph, "pad").outputs[0].shape, (std::vector<int64_t>{1, 3, 12, 10}));
  EXPECT_EQ(OpNamed(r.graph, "conv").outputs[0].shape, (std::vector<int64_t>{1, 4, 10, 8}));
  EXPECT_DOUBLE_EQ(OpNamed(r.graph, "conv").flops, 2.0 * 4 * 10 * 8 * 27);

  // Opset 9: x [2, 6] reshaped to [last dim, -1] = [6, 2], the last dim
  // sliced out of its shape by a Slice whose bounds are attributes.
  onnx::ModelProto old = NewModel(/*ir_version=*/4, /*opset=*/9);
  AddInput(old, "x", {"2", "6"});
  AddNode(old, "Shape", "shape", {"x"}, {"s"});
  auto* last = AddNode(old, "Slice", "last", {"s"}, {"n"});
  SetInts(last, "starts", {-1});
  SetInts(last, "ends", {std::numeric_limits<int64_t>::max()});
  SetInts(last, "axes", {0});
  AddIntConstant(old, "minus_one", {-1}, /*scalar=*/false);
  SetInt(AddNode(old, "Concat", "cat", {"n", "minus_one"}, {"target"}), "axis", 0);
  AddNode(old, "Reshape", "reshape", {"x", "target"}, {"y"});
  AddOutput(old, "y");
  OnnxImportResult r9 = ImportOnnxFile(Save(dir, old));
  EXPECT_TRUE(r9.unknown_shape_tensors.empty());
  EXPECT_EQ(OpNamed(r9.graph, "reshape").outputs[0].shape, (std::vector<int64_t>{6, 2}));
}

// Where shapes stay unknown (a computation the folder cannot evaluate), the
// products that cost nothing for it are named in the warning, not left to
// a total of 0 FLOPs to tell.
TEST(OnnxImportTest, ProductsOfUnknownShapeAreNamedInTheWarning) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {"1", "3", "8", "8"});
  AddInput(m, "amounts", {"8"});  // a data input: nothing can fold it
  m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  AddWeight(m, "w", {4, 3, 3, 3});
  AddNode(m, "Pad", "pad", {"x", "amounts"}, {"padded"});
  AddNode(m, "Conv", "conv", {"padded", "w"}, {"y"});
  AddOutput(m, "y");
  TempDir dir;
  const std::string path = Save(dir, m);
  OnnxImportResult r = ImportOnnxFile(path);
  EXPECT_EQ(r.uncosted_products, (std::vector<std::string>{"conv"}));
  const std::string warning = OnnxImportWarning(path, r);
  EXPECT_NE(warning.find("matrix products of unknown shape costed at 0 FLOPs: conv"), std::string::npos) << warning;
}

// An empty constant may have a huge dim ([0, 2^40]): the folder's Slice and
// Transpose must not walk it (nor overflow its strides).
TEST(OnnxHostileTest, EmptyConstantsWithHugeDimsAreNotWalked) {
  TempDir dir;
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {"4"});
  auto* empty = AddNode(m, "Constant", "empty", {}, {"e"});
  auto* value = empty->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  value->mutable_t()->add_dims(0);
  value->mutable_t()->add_dims(int64_t{1} << 40);
  value->mutable_t()->add_dims(int64_t{1} << 40);
  AddNode(m, "Transpose", "flip", {"e"}, {"t"});
  AddIntConstant(m, "start", {0}, /*scalar=*/false);
  AddIntConstant(m, "end", {1}, /*scalar=*/false);
  AddIntConstant(m, "axis", {1}, /*scalar=*/false);
  AddNode(m, "Slice", "cut", {"t", "start", "end", "axis"}, {"u"});
  AddNode(m, "Relu", "relu", {"x"}, {"y"});
  AddOutput(m, "y");
  try {
    OnnxImportResult r = ImportOnnxFile(Save(dir, m));
    EXPECT_GE(r.graph.FindOp("relu"), 0);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.onnx"), std::string::npos) << e.what();
  }
}

TEST(OnnxHostileTest, HugeRangesAreNotMaterialized) {
  TempDir dir;
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {"4"});
  AddIntConstant(m, "start", {0});
  AddIntConstant(m, "limit", {std::numeric_limits<int64_t>::max()});
  AddIntConstant(m, "delta", {1});
  AddNode(m, "Range", "range", {"start", "limit", "delta"}, {"r"});
  AddNode(m, "Shape", "shape", {"r"}, {"s"});
  AddNode(m, "Relu", "relu", {"x"}, {"y"});
  AddOutput(m, "y");
  AddOutput(m, "s");
  m.mutable_graph()->mutable_output(1)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  const std::string path = Save(dir, m);
  // Either the range stays a (huge) op or the import refuses it by name;
  // it is never folded into 2^63 values.
  try {
    OnnxImportResult r = ImportOnnxFile(path);
    EXPECT_GE(r.graph.FindOp("range"), 0);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'r'"), std::string::npos) << e.what();
  }
}

onnx::ModelProto ConvWith(const std::string& type, const std::string& attribute, const std::vector<int64_t>& values) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {"1", "3", "8", "8"});
  std::vector<std::string> inputs = {"x"};
  if (type == "Conv" || type == "ConvTranspose") {
    AddWeight(m, "w", {4, 3, 3, 3});
    inputs.push_back("w");
  }
  auto* node = AddNode(m, type, "bad/" + type, inputs, {"y"});
  if (type != "Conv" && type != "ConvTranspose" && attribute != "kernel_shape") SetInts(node, "kernel_shape", {2, 2});
  if (attribute == "group") {
    SetInt(node, "group", values[0]);
  } else {
    SetInts(node, attribute, values);
  }
  AddOutput(m, "y");
  return m;
}

TEST(OnnxHostileTest, AttributesShapeInferenceDividesByAreCheckedFirst) {
  TempDir dir;
  int i = 0;
  for (const auto& [type, attribute, values] : std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>>{
           {"Conv", "strides", {0, 0}},
           {"MaxPool", "strides", {0, 1}},
           {"AveragePool", "strides", {-1, 1}},
           {"Conv", "dilations", {0, 1}},
           {"MaxPool", "dilations", {1, 0}},
           {"Conv", "kernel_shape", {0, 3}},
           {"MaxPool", "kernel_shape", {-2, 2}},
           {"Conv", "pads", {1, 1, 1}},
           {"MaxPool", "pads", {1, 1}},
           {"Conv", "pads", {-1, 0, 0, 0}},
           {"ConvTranspose", "output_padding", {0}},
           {"ConvTranspose", "strides", {0, 0}},
           {"Conv", "group", {0}},
           {"Conv", "strides", {int64_t{1} << 40, 1}}}) {
    SCOPED_TRACE(type + " " + attribute);
    ExpectImportError(Save(dir, ConvWith(type, attribute, values), "m" + std::to_string(i++) + ".onnx"),
                      {"bad/" + type, "'" + attribute + "'"});
  }
  for (const char* type : {"DepthToSpace", "SpaceToDepth"}) {
    onnx::ModelProto m = NewModel();
    AddInput(m, "x", {"1", "4", "2", "2"});
    SetInt(AddNode(m, type, "blocks", {"x"}, {"y"}), "blocksize", 0);
    AddOutput(m, "y");
    ExpectImportError(Save(dir, m, std::string(type) + ".onnx"), {"blocks", "'blocksize'"});
  }
}

TEST(OnnxHostileTest, MissingInputsOutputsAndBadTensorsAreErrors) {
  TempDir dir;
  int i = 0;
  auto check = [&](onnx::ModelProto m, const std::vector<std::string>& mention) {
    ExpectImportError(Save(dir, m, "m" + std::to_string(i++) + ".onnx"), mention);
  };
  // Each also with an op libonnx has no schema for, which once skipped the checker.
  for (bool unregistered : {false, true}) {
    SCOPED_TRACE(unregistered ? "with an unregistered op" : "checked");
    auto base = [&] {
      onnx::ModelProto m = NewModel();
      AddInput(m, "x", {"2", "3"});
      if (unregistered) AddNode(m, "NoSuchOp", "custom", {"x"}, {"z"});
      return m;
    };
    {
      onnx::ModelProto m = base();
      AddNode(m, "Concat", "cat", {"x", ""}, {"y"});
      SetInt(m.mutable_graph()->mutable_node(m.graph().node_size() - 1), "axis", 0);
      AddOutput(m, "y");
      check(m, {"'cat'", "empty name"});
    }
    {
      onnx::ModelProto m = base();
      AddNode(m, "Shape", "shape", {}, {"y"});
      AddOutput(m, "y");
      check(m, {"'shape'", "0 inputs"});
    }
    {
      onnx::ModelProto m = base();
      AddNode(m, "Add", "add", {"x", "absent_weight"}, {"y"});
      AddOutput(m, "y");
      check(m, {"'add'", "absent_weight"});
    }
    {
      onnx::ModelProto m = base();
      AddNode(m, "Relu", "relu", {"x"}, {});
      check(m, {"'relu'", "0 outputs"});
    }
    {
      onnx::ModelProto m = base();
      AddNode(m, "Cast", "cast", {"x"}, {"y"});  // 'to' is required
      AddOutput(m, "y");
      check(m, {"'cast'", "'to'"});
    }
    {
      onnx::ModelProto m = base();
      AddNode(m, "Gemm", "gemm", {"x"}, {"y"});  // Gemm takes 2 to 3 inputs
      AddOutput(m, "y");
      check(m, {"'gemm'", "1 inputs"});
    }
  }
  // Tensors whose data does not fill their dims, negative or overflowing dims.
  {
    onnx::ModelProto m = NewModel();
    AddInput(m, "x", {"2", "3"});
    AddWeight(m, "w", {2, 3});
    m.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(5, '\0'));
    AddNode(m, "Add", "add", {"x", "w"}, {"y"});
    AddOutput(m, "y");
    check(m, {"initializer 'w'", "5 bytes"});
  }
  {
    onnx::ModelProto m = NewModel();
    AddInput(m, "x", {"2"});
    auto* shape = m.mutable_graph()->add_initializer();
    shape->set_name("shape");
    shape->set_data_type(onnx::TensorProto::INT64);
    shape->add_dims(4);
    shape->add_int64_data(2);  // one value for four elements
    AddNode(m, "Reshape", "reshape", {"x", "shape"}, {"y"});
    AddOutput(m, "y");
    check(m, {"initializer 'shape'", "1 values for 4 elements"});
  }
  {
    onnx::ModelProto m = NewModel();
    AddInput(m, "x", {"2", "3"});
    AddWeight(m, "w", {2, 3});
    m.mutable_graph()->mutable_initializer(0)->set_dims(0, -2);
    AddNode(m, "Add", "add", {"x", "w"}, {"y"});
    AddOutput(m, "y");
    check(m, {"initializer 'w'", "negative"});
  }
  {
    onnx::ModelProto m = NewModel();
    AddInput(m, "x", {"4294967296", "4294967296", "4294967296"});
    AddNode(m, "Relu", "relu", {"x"}, {"y"});
    AddOutput(m, "y");
    check(m, {"'x'", "more elements"});
  }
  {
    onnx::ModelProto m = NewModel();
    AddInput(m, "x", {"2", "3"});
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(-3);
    AddNode(m, "Relu", "relu", {"x"}, {"y"});
    AddOutput(m, "y");
    check(m, {"'x'", "-3"});
  }
  {
    // A 1 PiB+ tensor with no data of its own (external) is refused by size.
    onnx::ModelProto m = NewModel();
    AddInput(m, "x", {"1048576", "1048576", "1024"});
    AddNode(m, "Relu", "relu", {"x"}, {"y"});
    AddOutput(m, "y");
    check(m, {"1 PiB"});
  }
  {
    // Shape inference gives a 5-wide kernel on a 3-wide input a negative size.
    onnx::ModelProto m = NewModel();
    AddInput(m, "x", {"1", "1", "3", "3"});
    SetInts(AddNode(m, "MaxPool", "pool", {"x"}, {"y"}), "kernel_shape", {5, 5});
    AddOutput(m, "y");
    check(m, {"'y'", "-1"});
  }
}

// Models on which libonnx 1.12's own shape inference reads out of bounds
// (found by fuzzing): each is an Error naming the file, never a crash.
TEST(OnnxHostileTest, ShapeInferenceCrashesBecomeErrors) {
  TempDir dir;
  auto scalar = [](onnx::ModelProto& m, const std::string& name, int32_t type, std::vector<int64_t> dims) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    int64_t n = 1;
    for (int64_t d : dims) t->add_dims(d), n *= d;
    for (int64_t i = 0; i < n; ++i) type == onnx::TensorProto::INT64 ? t->add_int64_data(0) : t->add_float_data(0);
  };
  std::vector<onnx::ModelProto> models;
  {
    onnx::ModelProto m = NewModel(8, 17);  // LayerNormalization of a scalar
    scalar(m, "x", onnx::TensorProto::INT64, {});
    scalar(m, "s", onnx::TensorProto::FLOAT, {3, 0});
    AddNode(m, "LayerNormalization", "ln", {"x", "s"}, {"y", "m", "v"});
    models.push_back(m);
  }
  {
    onnx::ModelProto m = NewModel(8, 17);  // Sub of an empty tensor and a scalar
    scalar(m, "a", onnx::TensorProto::INT64, {0});
    scalar(m, "b", onnx::TensorProto::INT64, {});
    AddNode(m, "Sub", "sub", {"a", "b"}, {"y"});
    models.push_back(m);
  }
  {
    onnx::ModelProto m = NewModel(8, 17);  // GatherND with batch_dims -1
    AddInput(m, "x", {"1"});
    scalar(m, "i", onnx::TensorProto::FLOAT, {2, 0});
    SetInt(AddNode(m, "GatherND", "gnd", {"x", "i"}, {"y"}), "batch_dims", -1);
    models.push_back(m);
  }
  {
    onnx::ModelProto m = NewModel(8, 17);  // MaxUnpool with scalar indices
    AddInput(m, "x", {"5", "2"});
    scalar(m, "i", onnx::TensorProto::INT64, {});
    SetInts(AddNode(m, "MaxUnpool", "unpool", {"x", "i"}, {"y"}), "kernel_shape", {});
    models.push_back(m);
  }
  for (size_t i = 0; i < models.size(); ++i) {
    for (bool newer : {false, true}) {  // with and without libonnx's checker
      onnx::ModelProto m = models[i];
      m.mutable_graph()->add_output()->set_name(m.graph().node(0).output(0));
      if (newer) m.set_ir_version(99);
      const std::string path = Save(dir, m, "m" + std::to_string(i) + (newer ? "n" : "") + ".onnx");
      const std::string message = ErrorOf(path);
      if (message.empty()) continue;  // imported: also no crash
      EXPECT_NE(message.find(path), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

TEST(OnnxHostileTest, NamesThatAreNotUtf8AreCarriedEscaped) {
  TempDir dir;
  onnx::ModelProto m = SmallCnn();
  const std::string bad_name = std::string("conv\xff\xfe") + "\nname";
  m.mutable_graph()->mutable_node(0)->set_name(bad_name);
  m.mutable_graph()->set_name("graph\xc3");
  OnnxImportResult r = ImportOnnxFile(Save(dir, m));
  const int32_t conv = r.graph.FindOp("conv\\xFF\\xFE\\nname");
  ASSERT_GE(conv, 0);
  EXPECT_DOUBLE_EQ(r.graph.op(conv).flops, kConvFlops);
  EXPECT_EQ(r.graph.name, "graph\\xC3");
  // A graph file is JSON: writing and reading it back must work.
  SaveGraphFile(r.graph, dir.File("g.json"));
  EXPECT_GE(LoadGraphFile(dir.File("g.json")).FindOp("conv\\xFF\\xFE\\nname"), 0);
  // Valid UTF-8 names are kept as they are.
  onnx::ModelProto ok = SmallCnn();
  ok.mutable_graph()->mutable_node(0)->set_name("couche\xc3\xa9\\1");
  EXPECT_GE(ImportOnnxFile(Save(dir, ok, "ok.onnx")).graph.FindOp("couche\xc3\xa9\\1"), 0);

  // In an error the name is escaped onto one line.
  auto* conv_node = m.mutable_graph()->mutable_node(0);
  SetInts(conv_node, "strides", {0, 0});
  ExpectImportError(Save(dir, m, "bad.onnx"), {"conv\\xFF\\xFE\\nname"});
}

TEST(OnnxHostileTest, FilesThatAreNotModelsAreNamedErrors) {
  TempDir dir;
  std::string random(4096, '\0');
  uint32_t state = 12345;
  for (char& c : random) c = static_cast<char>((state = state * 1103515245u + 12345u) >> 24);
  ExpectImportError(dir.Write("random.onnx", random), {"random.onnx"});
  ExpectImportError(dir.Write("zeros.onnx", std::string(100, '\0')), {"not"});
  // A file past protobuf's 2 GiB is refused before it is read (sparse here).
  const std::string huge = dir.Write("huge.onnx", "x");
  std::filesystem::resize_file(huge, (uint64_t{3} << 30));
  ExpectImportError(huge, {"2 GiB"});
  std::filesystem::create_directory(dir.File("dir.onnx"));
  ExpectImportError(dir.File("dir.onnx"), {"not a file"});
  // A path with a newline is echoed escaped.
  const std::string odd = dir.Write("odd\nname.onnx", "junk");
  const std::string message = ErrorOf(odd);
  EXPECT_NE(message.find("odd\\nname.onnx"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(OnnxHostileTest, CliReportsHostileModelsInOneLine) {
  TempDir dir;
  const std::string model = Save(dir, ConvWith("Conv", "strides", {0, 0}), "stride0.onnx");
  const std::string out = dir.File("g.json");
  auto [code, text] = Devplace("import " + model + " -o " + out);
  EXPECT_EQ(code, 1) << text;
  EXPECT_EQ(text.rfind("devplace: error: ", 0), 0u) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_FALSE(std::filesystem::exists(out));
  auto [info_code, info_text] = Devplace("info --graph " + model);
  EXPECT_EQ(info_code, 1) << info_text;
  EXPECT_NE(info_text.find("strides"), std::string::npos) << info_text;
}

// torchvision's models, exported by tools/make_test_models.py (a ctest
// fixture), against the published multiply-add counts and PyTorch's own
// parameter counts.
class TorchvisionModelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream file(std::string(DEVPLACE_ONNX_MODELS) + "/expected.json");
    if (!file) GTEST_SKIP() << "no test models in " << DEVPLACE_ONNX_MODELS << " (python3-torch missing?)";
    expected_ = nlohmann::json::parse(file);
  }
  std::string Path(const std::string& name) const { return std::string(DEVPLACE_ONNX_MODELS) + "/" + name + ".onnx"; }
  int64_t ExpectedParameters(const std::string& name) const { return expected_.at(name).at("parameters"); }

  nlohmann::json expected_;
};

void ExpectCompleteImport(const OnnxImportResult& r) {
  EXPECT_TRUE(r.unknown_shape_tensors.empty()) << r.unknown_shape_tensors.size() << " unknown, first "
                                               << r.unknown_shape_tensors.front();
  EXPECT_TRUE(r.unknown_op_types.empty()) << r.unknown_op_types.front();
}

TEST_F(TorchvisionModelsTest, ResNet50MatchesPublishedMultiplyAdds) {
  OnnxImportResult r = ImportOnnxFile(Path("resnet50"));
  ExpectCompleteImport(r);
  EXPECT_NEAR(r.forward_flops / 2, 4.1e9, 0.05 * 4.1e9);
  EXPECT_EQ(r.parameter_count, ExpectedParameters("resnet50"));
  EXPECT_EQ(r.parameter_count, 25'557'032);
}

TEST_F(TorchvisionModelsTest, InceptionV3MatchesPublishedMultiplyAdds) {
  OnnxImportResult r = ImportOnnxFile(Path("inception_v3"));
  ExpectCompleteImport(r);
  EXPECT_NEAR(r.forward_flops / 2, 5.7e9, 0.05 * 5.7e9);
  EXPECT_EQ(r.parameter_count, ExpectedParameters("inception_v3"));
}

TEST_F(TorchvisionModelsTest, TransformerNeedsItsSequenceLengths) {
  try {
    ImportOnnxFile(Path("transformer"));
    FAIL() << "expected an error naming the dynamic dimensions";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("src_len, tgt_len"), std::string::npos) << e.what();
  }
  OnnxImportOptions options;
  options.dims = {{"src_len", 10}, {"tgt_len", 7}};
  options.training = true;
  OnnxImportResult r = ImportOnnxFile(Path("transformer"), options);
  ExpectCompleteImport(r);
  EXPECT_EQ(r.parameter_count, ExpectedParameters("transformer"));
  // Training: the backward pass costs about twice the forward pass.
  const double step_flops = r.graph.total_flops();
  EXPECT_GT(step_flops, 2.5 * r.forward_flops);
  EXPECT_LT(step_flops, 3.5 * r.forward_flops);
}

// tools/export_pytorch.py on a two-layer MLP: a graph devplace loads, with
// module names, co-located phases and the products' FLOPs.
TEST(PyTorchExporterTest, WritesTheTrainingStepWithModuleNames) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 lacks torch";
  TempDir dir;
  const std::string script = dir.Write("mlp.py", R"(import torch
def make_model(batch):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    return model, (torch.randn(batch, 8),), torch.randint(0, 4, (batch,))
)");
  const std::string out = dir.File("mlp.json");
  const std::string command = "/usr/bin/python3 " + std::string(DEVPLACE_TOOLS) + "/export_pytorch.py " + script +
                              " --batch 4 -o " + out + " > " + dir.File("log") + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << std::ifstream(dir.File("log")).rdbuf();
  Graph g = LoadGraphFile(out);
  int forward_products = 0, backward = 0, updates = 0;
  double forward_product_flops = 0;
  for (const Op& op : g.ops()) {
    if (op.phase == Phase::kForward && op.type == "aten.addmm") {
      ++forward_products;
      forward_product_flops += op.flops;
    }
    if (op.phase == Phase::kBackward && op.colocation_group == "0") ++backward;
    if (op.phase == Phase::kUpdate && op.colocation_group == "2") ++updates;
  }
  EXPECT_EQ(forward_products, 2);
  EXPECT_DOUBLE_EQ(forward_product_flops, 2.0 * 4 * 16 * 8 + 2.0 * 4 * 4 * 16);
  EXPECT_GT(backward, 0);  // the first layer's gradient sits with it
  EXPECT_GT(updates, 0);   // and the last layer's Adam update with it
  EXPECT_GE(g.FindOp("0.weight"), 0);
  EXPECT_EQ(g.op(g.FindOp("0.weight")).colocation_group, "0");
}

// Runs tools/export_pytorch.py with `arguments`; its exit status and what
// it printed.
std::pair<int, std::string> ExportPyTorch(const TempDir& dir, const std::string& arguments) {
  const std::string log = dir.File("export.log");
  const std::string command = "/usr/bin/python3 " + std::string(DEVPLACE_TOOLS) + "/export_pytorch.py " + arguments + " > " + log + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

// GoogLeNet and Inception return their auxiliary classifiers' logits beside
// the main ones when training: the default loss takes them all (the
// auxiliary heads get a backward pass and updates), not only a tensor.
TEST(PyTorchExporterTest, TrainsAuxiliaryOutputsOfAModelThatReturnsSeveral) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 lacks torch";
  TempDir dir;
  const std::string script = dir.Write("aux.py", R"(import collections
import torch
Outputs = collections.namedtuple("Outputs", ["logits", "aux_logits"])
class TwoHeads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(8, 16)
        self.main = torch.nn.Linear(16, 4)
        self.aux = torch.nn.Linear(16, 4)
    def forward(self, x):
        h = torch.relu(self.body(x))
        return Outputs(self.main(h), self.aux(h))
def make_model(batch):
    return TwoHeads(), (torch.randn(batch, 8),), torch.randint(0, 4, (batch,))
)");
  const std::string out = dir.File("aux.json");
  auto [code, log] = ExportPyTorch(dir, script + " --batch 4 -o " + out);
  ASSERT_EQ(code, 0) << log;
  Graph g = LoadGraphFile(out);
  int aux_backward = 0, aux_updates = 0, main_backward = 0;
  for (const Op& op : g.ops()) {
    aux_backward += op.phase == Phase::kBackward && op.colocation_group == "aux";
    aux_updates += op.phase == Phase::kUpdate && op.colocation_group == "aux";
    main_backward += op.phase == Phase::kBackward && op.colocation_group == "main";
  }
  EXPECT_GT(main_backward, 0);
  EXPECT_GT(aux_backward, 0);  // the auxiliary loss reaches its head
  EXPECT_GT(aux_updates, 0);
}

// Every parameter is an input of the step's ops and gets its optimizer
// update, however the model reaches it: an RNN reads cached flat weights
// (torch 1.13's functional_call left them as constants, one copy a time
// step), a decoder tied to its embedding reads the weight under a second
// name (lost its gradient), and a Linear whose bias is a buffer (its
// product's FLOPs read the wrong argument's shape, 15x too many).
TEST(PyTorchExporterTest, EveryParameterIsReadAndUpdatedHoweverTheModelReachesIt) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 lacks torch";
  TempDir dir;
  const std::string script = dir.Write("reach.py", R"(import torch
class BufferBias(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(10, 16))
        self.register_buffer("bias", torch.zeros(10))
    def forward(self, x):
        return torch.nn.functional.linear(x, self.weight, self.bias)
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 16)
        self.rnn = torch.nn.LSTM(16, 16, num_layers=2, batch_first=True)
        self.gru = torch.nn.GRU(16, 16, batch_first=True)
        self.tied = torch.nn.Linear(16, 10, bias=False)
        self.tied.weight = self.emb.weight
        self.head = BufferBias()
    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        h, _ = self.gru(h)
        return self.tied(h[:, -1]) + self.head(h[:, 0])
def make_model(batch):
    return Model(), (torch.randint(0, 10, (batch, 5)),), torch.randint(0, 10, (batch,))
)");
  const std::string out = dir.File("reach.json");
  auto [code, log] = ExportPyTorch(dir, script + " --batch 4 -o " + out);
  ASSERT_EQ(code, 0) << log;
  Graph g = LoadGraphFile(out);
  // emb; rnn: 2 layers x 4; gru: 4; head.weight (tied shares emb's).
  const int64_t parameters = 10 * 16 + 2 * (4 * 16 * 16 * 2 + 4 * 16 * 2) + (3 * 16 * 16 * 2 + 3 * 16 * 2) + 10 * 16;
  int variables = 0;
  for (int32_t id = 0; id < g.num_ops(); ++id) {
    const Op& op = g.op(id);
    EXPECT_EQ(op.name.find("_param_constant"), std::string::npos) << op.name << ": a parameter traced as a constant";
    if (op.type != "VariableV2") continue;
    ++variables;
    EXPECT_FALSE(g.out_data_edges(id).empty()) << op.name << " is read by no op";
  }
  EXPECT_EQ(variables, 1 + 2 * 4 + 4 + 1);
  // The weights and Adam's two slots for each: 12 bytes a parameter.
  EXPECT_GE(g.total_persistent_bytes(), 12 * parameters);
  EXPECT_LT(g.total_persistent_bytes(), 12 * parameters + 1024);
  bool head_product = false;
  for (const Op& op : g.ops()) {
    if (op.phase == Phase::kForward && op.colocation_group == "head" && op.type == "aten.addmm") {
      head_product = true;
      EXPECT_DOUBLE_EQ(op.flops, 2.0 * 4 * 10 * 16);
    }
  }
  EXPECT_TRUE(head_product);
  // The buffer is one op under its state_dict name, in its module's group
  // (a device_map needs it where the module is split).
  const int32_t bias = g.FindOp("head.bias");
  ASSERT_GE(bias, 0);
  EXPECT_EQ(g.op(bias).type, "Const");
  EXPECT_EQ(g.op(bias).colocation_group, "head");
}

// A make_model without a target: the default loss is the mean square of the
// output, whatever its rank (a (batch, classes) output asked the missing
// target for its rank, an AttributeError).
TEST(PyTorchExporterTest, AModelWithoutATargetTrainsOnTheMeanSquare) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 lacks torch";
  TempDir dir;
  const std::string script = dir.Write(
      "untargeted.py", "import torch\ndef make_model(batch):\n    return torch.nn.Linear(4, 3), (torch.randn(batch, 4),), None\n");
  auto [code, log] = ExportPyTorch(dir, script + " --batch 2 -o " + dir.File("g.json"));
  ASSERT_EQ(code, 0) << log;
  Graph g = LoadGraphFile(dir.File("g.json"));
  EXPECT_GE(g.FindOp("weight"), 0);
}

// A bad model argument, flag or output path: one line naming it, exit
// status 1, and no graph file (nor its temporary) left behind.
TEST(PyTorchExporterTest, RefusesBadArgumentsInOneLineAndWritesNothing) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 lacks torch";
  TempDir dir;
  const std::string no_maker = dir.Write("no_maker.py", "x = 1\n");
  const std::string raises = dir.Write("raises.py", "def make_model(batch):\n    raise RuntimeError('no weights here')\n");
  const std::string no_parameters = dir.Write(
      "no_parameters.py", "import torch\ndef make_model(batch):\n    return torch.nn.ReLU(), (torch.randn(batch, 4),), None\n");
  const std::string out = dir.File("g.json");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"no_such_model -o " + out, "no_such_model"},
      {"resnet18 --batch 0 -o " + out, "--batch"},
      {no_maker + " -o " + out, "make_model"},
      {raises + " --batch 2 -o " + out, "no weights here"},
      {no_parameters + " --batch 2 -o " + out, "no trainable parameters"},
      {dir.File("missing.py") + " -o " + out, "no such file"},
      {no_maker + " -o " + dir.File("no_dir/g.json"), "no_dir"},
      // argparse's own refusals: one line and exit 1 too, not usage and 2
      {"resnet18 --batch nan -o " + out, "--batch"},
      {"resnet18 --image-size -o " + out, "--image-size"},
      {"resnet18", "--output"},
      {"resnet18 --colour red -o " + out, "--colour"},
  };
  for (const auto& [arguments, named] : cases) {
    auto [code, log] = ExportPyTorch(dir, arguments);
    EXPECT_EQ(code, 1) << arguments << ": " << log;
    EXPECT_EQ(log.rfind("export_pytorch: error: ", 0), 0u) << arguments << ": " << log;
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << arguments << ": " << log;
    EXPECT_NE(log.find(named), std::string::npos) << arguments << ": " << log;
    EXPECT_FALSE(std::filesystem::exists(out)) << arguments;
    EXPECT_FALSE(std::filesystem::exists(out + ".tmp")) << arguments;
  }
}

TEST(OnnxImportCliTest, ImportWritesAGraphAndOtherCommandsReadOnnx) {
  TempDir dir;
  const std::string model = Save(dir, SmallCnn("batch"));
  auto [code, out] = Devplace("import " + model + " -o " + dir.File("g.json") + " --dim batch=2 --training");
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("314 parameters"), std::string::npos) << out;
  EXPECT_TRUE(std::filesystem::exists(dir.File("g.json")));

  auto [missing_code, missing_out] = Devplace("import " + model + " -o " + dir.File("h.json"));
  EXPECT_NE(missing_code, 0);
  EXPECT_EQ(missing_out.rfind("devplace: error: ", 0), 0u) << missing_out;
  EXPECT_NE(missing_out.find("batch"), std::string::npos) << missing_out;

  const std::string fixed = Save(dir, SmallCnn("1"), "fixed.onnx");
  auto [info_code, info_out] = Devplace("info --graph " + fixed);
  EXPECT_EQ(info_code, 0) << info_out;
  auto [bad_code, bad_out] = Devplace("info --graph " + dir.Write("bad.onnx", "not a model"));
  EXPECT_NE(bad_code, 0);
  EXPECT_EQ(bad_out.rfind("devplace: error: ", 0), 0u) << bad_out;
  EXPECT_EQ(std::count(bad_out.begin(), bad_out.end(), '\n'), 1) << bad_out;
}

}  // namespace
}  // namespace devplace
