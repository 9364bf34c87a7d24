// The placement formats of `devplace export`: devplace JSON, CSV,
// TensorFlow device strings and accelerate device maps.
#include "report/placement_formats.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "report/device_map.h"
#include "test_util.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

using testing::MakeOp;
using testing::MakeTestCluster;
using testing::TempDir;

// Three ops in a chain, one name with a comma and a quote in it.
Graph SmallGraph() {
  Graph g;
  g.name = "small";
  int32_t a = g.AddOp(MakeOp(0, "input", 0, 4));
  int32_t b = g.AddOp(MakeOp(1, "layer,\"one\"", 1e6, 4));
  int32_t c = g.AddOp(MakeOp(2, "layer2/MatMul", 1e6, 4));
  g.AddDataEdge(a, 0, b);
  g.AddDataEdge(b, 0, c);
  g.Finalize();
  return g;
}

// A PyTorch-exported training step in miniature, as tools/export_pytorch.py
// names it: parameters by their module path, each module's ops in a
// co-location group named after it, the loss in no module, and one
// parameter of the root module ("scale") without a group; layers.0 holds a
// buffer.
Graph TorchLikeGraph() {
  Graph g;
  g.name = "torchlike";
  int64_t id = 0;
  int32_t previous = -1;
  auto add = [&](const std::string& name, const std::string& type, const std::string& group) {
    Op op = MakeOp(id++, name, type == "VariableV2" ? 0 : 1e6, 4);
    op.type = type;
    op.colocation_group = group;
    return g.AddOp(op);
  };
  int32_t input = add("input/x", "Input", "");
  previous = input;
  int32_t mlp0 = -1;
  for (const std::string module : {"embed", "layers.0.attn", "layers.0.mlp", "layers.1.attn", "layers.1.mlp", "head"}) {
    int32_t weight = add(module + ".weight", "VariableV2", module);
    int32_t compute = add(module + "/mm", "aten.mm", module);
    int32_t grad = add(module + "/mm_backward", "aten.mm", module);
    g.AddDataEdge(weight, 0, compute);
    g.AddDataEdge(previous, 0, compute);
    g.AddDataEdge(compute, 0, grad);
    previous = compute;
    if (module == "layers.0.mlp") mlp0 = compute;
  }
  // layers.0 computes with a parameter of its own besides its children's.
  int32_t norm = add("layers.0.norm_weight", "VariableV2", "layers.0");
  int32_t norm_op = add("layers.0/mul", "aten.mul", "layers.0");
  g.AddDataEdge(norm, 0, norm_op);
  g.AddDataEdge(mlp0, 0, norm_op);
  // And a buffer (a state_dict key, as the exporter names one), and a
  // constant that is none.
  int32_t buffer = add("layers.0.position_index", "Const", "layers.0");
  int32_t constant = add("layers.0/_tensor_constant0", "Const", "layers.0");
  g.AddDataEdge(buffer, 0, norm_op);
  g.AddDataEdge(constant, 0, norm_op);
  int32_t scale = add("scale", "VariableV2", "");
  int32_t loss = add("forward/nll_loss", "aten.nll_loss_forward", "");
  g.AddDataEdge(previous, 0, loss);
  g.AddDataEdge(scale, 0, loss);
  g.Finalize();
  return g;
}

// Each op of `graph` on the device `device_of(op name)`.
template <typename F>
Placement PlaceBy(const Graph& graph, F device_of) {
  Placement p(graph.num_ops());
  for (int32_t op = 0; op < graph.num_ops(); ++op) p[op] = device_of(graph.op(op).name);
  return p;
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST(PlacementFormatsTest, FormatComesFromTheNameOrTheExtension) {
  EXPECT_EQ(ParsePlacementFormat("csv"), PlacementFormat::kCsv);
  EXPECT_EQ(ParsePlacementFormat("tf"), PlacementFormat::kTensorflow);
  EXPECT_EQ(ParsePlacementFormat("device_map"), PlacementFormat::kDeviceMap);
  EXPECT_EQ(ParsePlacementFormat("devplace"), PlacementFormat::kDevplace);
  EXPECT_FALSE(ParsePlacementFormat("xml"));
  for (PlacementFormat f : {PlacementFormat::kDevplace, PlacementFormat::kCsv, PlacementFormat::kTensorflow,
                            PlacementFormat::kDeviceMap}) {
    EXPECT_EQ(ParsePlacementFormat(PlacementFormatName(f)), f);
    EXPECT_NE(PlacementFormatNames().find(PlacementFormatName(f)), std::string::npos);
  }
  EXPECT_EQ(PlacementFormatForPath("out/model.device_map.json"), PlacementFormat::kDeviceMap);
  EXPECT_EQ(PlacementFormatForPath("model.tf.json"), PlacementFormat::kTensorflow);
  EXPECT_EQ(PlacementFormatForPath("model.csv"), PlacementFormat::kCsv);
  EXPECT_EQ(PlacementFormatForPath("best_placement.json"), PlacementFormat::kDevplace);
  try {
    PlacementFormatForPath("placement.txt");
    FAIL() << "no error for an unknown extension";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("placement.txt"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--format"), std::string::npos);
  }
}

TEST(PlacementFormatsTest, DevplaceJsonLoadsBackAsTheSamePlacement) {
  Graph g = SmallGraph();
  Cluster c = MakeTestCluster();
  Placement p = {0, 1, 2};
  TempDir dir;
  std::string path = dir.Write("p.json", FormatPlacement(PlacementFormat::kDevplace, g, c, p));
  EXPECT_EQ(LoadPlacementFile(path, g, c), p);
  nlohmann::json document = ReadJsonFile(path);
  EXPECT_EQ(document["format"], "devplace-placement");
  EXPECT_EQ(document["graph"], "small");
  EXPECT_EQ(document["cluster"], "test");
}

TEST(PlacementFormatsTest, CsvHasAHeaderAndARowPerOpQuotedWhereNeeded) {
  Graph g = SmallGraph();
  Cluster c = MakeTestCluster();
  std::string csv = FormatPlacement(PlacementFormat::kCsv, g, c, {0, 1, 2});
  EXPECT_EQ(csv, "op,device\ninput,cpu:0\n\"layer,\"\"one\"\"\",gpu:0\nlayer2/MatMul,gpu:1\n");
}

TEST(PlacementFormatsTest, TensorflowStringsNumberDevicesWithinTheirKind) {
  Cluster c;
  c.name = "mixed";
  c.devices = {testing::MakeDevice("gpu:a", DeviceKind::kGpu), testing::MakeDevice("host", DeviceKind::kCpu),
               testing::MakeDevice("gpu:b", DeviceKind::kGpu)};
  c.links = {{0, 1, 1e9, 1, -1}, {1, 2, 1e9, 1, -1}};
  c.Finalize("mixed");
  EXPECT_EQ(TensorflowDeviceString(c, 0), "/device:GPU:0");
  EXPECT_EQ(TensorflowDeviceString(c, 1), "/device:CPU:0");
  EXPECT_EQ(TensorflowDeviceString(c, 2), "/device:GPU:1");

  Graph g = SmallGraph();
  nlohmann::json tf = nlohmann::json::parse(FormatPlacement(PlacementFormat::kTensorflow, g, c, {1, 0, 2}));
  ASSERT_EQ(tf.size(), 3u);
  EXPECT_EQ(tf["input"], "/device:CPU:0");
  EXPECT_EQ(tf["layer,\"one\""], "/device:GPU:0");
  EXPECT_EQ(tf["layer2/MatMul"], "/device:GPU:1");
}

TEST(PlacementFormatsTest, DeviceMapCollapsesModulesThatShareADevice) {
  Graph g = TorchLikeGraph();
  Cluster c = MakeTestCluster();  // cpu:0, gpu:0, gpu:1
  Placement p = PlaceBy(g, [](const std::string& name) {
    if (StartsWith(name, "embed") || StartsWith(name, "input")) return 0;
    if (StartsWith(name, "layers.0")) return 1;
    return 2;
  });
  nlohmann::ordered_json map = DeviceMapJson(g, c, p);
  nlohmann::json expected = {{"embed", "cpu"}, {"layers.0", 0}, {"layers.1", 1}, {"head", 1}, {"scale", 1}};
  EXPECT_EQ(nlohmann::json::parse(map.dump()), expected) << map.dump();
  // Keys come in the order the modules run.
  std::vector<std::string> keys;
  for (const auto& [key, value] : map.items()) keys.push_back(key);
  auto at = [&](const std::string& k) { return std::find(keys.begin(), keys.end(), k) - keys.begin(); };
  EXPECT_LT(at("embed"), at("layers.0"));
  EXPECT_LT(at("layers.0"), at("layers.1"));
  EXPECT_LT(at("layers.1"), at("head"));
  // The same through FormatPlacement.
  EXPECT_EQ(nlohmann::json::parse(FormatPlacement(PlacementFormat::kDeviceMap, g, c, p)), expected);
}

TEST(PlacementFormatsTest, DeviceMapOfOneDeviceIsTheWholeModel) {
  Graph g = TorchLikeGraph();
  Cluster c = MakeTestCluster();
  nlohmann::ordered_json map = DeviceMapJson(g, c, PlaceBy(g, [](const std::string&) { return 2; }));
  EXPECT_EQ(map.dump(), R"({"":1})");
}

TEST(PlacementFormatsTest, DeviceMapSplitsAModuleIntoItsParametersAndChildren) {
  Graph g = TorchLikeGraph();
  Cluster c = MakeTestCluster();
  // layers.0.mlp moves to gpu:1; layers.0's own parameter stays on gpu:0.
  Placement p = PlaceBy(g, [](const std::string& name) {
    if (StartsWith(name, "layers.0.mlp")) return 2;
    if (StartsWith(name, "layers.0")) return 1;
    return StartsWith(name, "input") ? 0 : 1;
  });
  nlohmann::json map = nlohmann::json::parse(DeviceMapJson(g, c, p).dump());
  // accelerate wants a device for every state_dict key: the split
  // module's buffer too.
  nlohmann::json expected = {{"embed", 0},        {"layers.0.norm_weight", 0}, {"layers.0.position_index", 0},
                             {"layers.0.attn", 0}, {"layers.0.mlp", 1},        {"layers.1", 0},
                             {"head", 0},          {"scale", 0}};
  EXPECT_EQ(map, expected) << map.dump();
}

TEST(PlacementFormatsTest, DeviceMapRefusesGraphsWithoutModulesAndSplitModules) {
  Cluster c = MakeTestCluster();
  Graph plain = SmallGraph();
  try {
    DeviceMapJson(plain, c, {0, 1, 1});
    FAIL() << "a graph not from PyTorch gave a device_map";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("export_pytorch.py"), std::string::npos) << e.what();
  }
  Graph g = TorchLikeGraph();
  Placement split = PlaceBy(g, [](const std::string& name) { return name == "head/mm_backward" ? 2 : 1; });
  try {
    DeviceMapJson(g, c, split);
    FAIL() << "a split module gave a device_map";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'head'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace devplace
