#include "graph/graph_json.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/error.h"

namespace devplace {
namespace {

using testing::TempDir;

const char* kValidGraph = R"({
  "format": "devplace-graph", "version": 1, "name": "two",
  "some_future_field": {"ignored": true},
  "ops": [
    {"id": 7, "name": "x", "type": "Placeholder", "phase": "forward",
     "outputs": [{"shape": [64, 128], "dtype": "float32"}], "devices": ["cpu"], "unknown": 1},
    {"id": 9, "name": "y", "type": "MatMul", "phase": "backward", "flops": 1.5e6,
     "bytes_read": 100, "bytes_written": 50, "persistent_bytes": 1024, "temporary_bytes": 8,
     "colocation_group": "layer0",
     "outputs": [{"shape": [64, 10], "dtype": "float16", "bytes": 1280}],
     "inputs": [{"op": 7, "output": 0}], "control_inputs": [7]}
  ]
})";

// Loads `text` as a graph file and returns the error message ("" if none).
std::string LoadError(const std::string& text) {
  TempDir dir;
  std::string path = dir.Write("g.json", text);
  try {
    LoadGraphFile(path);
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << "error does not name the file: " << message;
    return message;
  }
  return "";
}

TEST(GraphJsonTest, LoadsEveryFieldAndToleratesUnknownOnes) {
  TempDir dir;
  Graph g = LoadGraphFile(dir.Write("g.json", kValidGraph));
  ASSERT_EQ(g.num_ops(), 2);
  EXPECT_EQ(g.name, "two");
  const Op& x = g.op(0);
  EXPECT_EQ(x.id, 7);
  EXPECT_EQ(x.outputs[0].bytes, 64 * 128 * 4);  // computed from shape and dtype
  EXPECT_EQ(x.device_kinds, MaskOf(DeviceKind::kCpu));
  const Op& y = g.op(1);
  EXPECT_EQ(y.phase, Phase::kBackward);
  EXPECT_DOUBLE_EQ(y.flops, 1.5e6);
  EXPECT_EQ(y.bytes_read, 100);
  EXPECT_EQ(y.bytes_written, 50);
  EXPECT_EQ(y.persistent_bytes, 1024);
  EXPECT_EQ(y.temporary_bytes, 8);
  EXPECT_EQ(y.colocation_group, "layer0");
  EXPECT_EQ(y.outputs[0].bytes, 1280);
  EXPECT_EQ(y.device_kinds, kAllDeviceKinds);
  ASSERT_EQ(g.data_edges().size(), 1u);
  EXPECT_EQ(g.data_edges()[0].src, 0);
  ASSERT_EQ(g.control_edges().size(), 1u);
}

TEST(GraphJsonTest, RoundTripsThroughAFile) {
  TempDir dir;
  Graph g = LoadGraphFile(dir.Write("g.json", kValidGraph));
  std::string again = dir.File("again.json");
  SaveGraphFile(g, again);
  Graph h = LoadGraphFile(again);
  EXPECT_EQ(GraphToJson(g), GraphToJson(h));
  EXPECT_EQ(h.op(1).colocation_group, "layer0");
  EXPECT_EQ(h.op(0).device_kinds, MaskOf(DeviceKind::kCpu));
}

TEST(GraphJsonTest, OutputsMayAliasPersistentMemory) {
  TempDir dir;
  Graph g = LoadGraphFile(dir.Write("g.json", R"({"version": 1, "ops": [{"id": 1, "name": "w", "type": "VariableV2",
      "persistent_bytes": 64, "outputs": [{"shape": [16], "aliases_persistent": true}]}]})"));
  EXPECT_TRUE(g.op(0).outputs[0].aliases_persistent);
  EXPECT_EQ(GraphToJson(g)["ops"][0]["outputs"][0]["aliases_persistent"], true);
  EXPECT_NE(LoadError(R"({"version": 1, "ops": [{"id": 1, "name": "w", "type": "VariableV2",
      "persistent_bytes": 8, "outputs": [{"shape": [16], "aliases_persistent": true}]}]})").find("aliases"), std::string::npos);
}

TEST(GraphJsonTest, MissingRequiredFieldNamesTheOpAndField) {
  std::string message = LoadError(R"({"version": 1, "ops": [{"id": 3, "type": "Add"}]})");
  EXPECT_NE(message.find("op 3"), std::string::npos) << message;
  EXPECT_NE(message.find("'name'"), std::string::npos) << message;
  EXPECT_NE(LoadError(R"({"version": 1, "ops": [{"name": "a", "type": "Add"}]})").find("'id'"), std::string::npos);
  EXPECT_NE(LoadError(R"({"ops": []})").find("'version'"), std::string::npos);
  EXPECT_NE(LoadError(R"({"version": 1})").find("'ops'"), std::string::npos);
}

TEST(GraphJsonTest, DanglingEdgeNamesTheOpAndTheMissingId) {
  std::string message = LoadError(
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "Add", "inputs": [{"op": 42}]}]})");
  EXPECT_NE(message.find("'a'"), std::string::npos) << message;
  EXPECT_NE(message.find("42"), std::string::npos) << message;
  EXPECT_NE(LoadError(R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "Add", "control_inputs": [5]}]})"), "");
}

TEST(GraphJsonTest, CycleIsAnError) {
  std::string message = LoadError(R"({"version": 1, "ops": [
      {"id": 1, "name": "a", "type": "Add", "outputs": [{"shape": [1]}], "inputs": [2]},
      {"id": 2, "name": "b", "type": "Add", "outputs": [{"shape": [1]}], "inputs": [1]}]})");
  EXPECT_NE(message.find("cycle"), std::string::npos) << message;
}

TEST(GraphJsonTest, DuplicateIdIsAnError) {
  std::string message = LoadError(R"({"version": 1, "ops": [
      {"id": 1, "name": "a", "type": "Add"}, {"id": 1, "name": "b", "type": "Add"}]})");
  EXPECT_NE(message.find("duplicate op id 1"), std::string::npos) << message;
}

TEST(GraphJsonTest, NegativeSizeIsAnError) {
  std::string message =
      LoadError(R"({"version": 1, "ops": [{"id": 4, "name": "w", "type": "VariableV2", "persistent_bytes": -1}]})");
  EXPECT_NE(message.find("op 4"), std::string::npos) << message;
  EXPECT_NE(message.find("negative persistent_bytes"), std::string::npos) << message;
  EXPECT_NE(LoadError(R"({"version": 1, "ops": [{"id": 4, "name": "w", "type": "A", "flops": -3}]})"), "");
  EXPECT_NE(LoadError(R"({"version": 1, "ops": [{"id": 4, "name": "w", "type": "A", "outputs": [{"shape": [2], "bytes": -8}]}]})"), "");
}

TEST(GraphJsonTest, WrongTypesAndUnknownEnumsAreErrors) {
  EXPECT_NE(LoadError(R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "flops": "many"}]})").find("'flops'"),
            std::string::npos);
  EXPECT_NE(LoadError(R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "phase": "sideways"}]})").find("sideways"),
            std::string::npos);
  EXPECT_NE(LoadError(R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "devices": ["tpu"]}]})").find("tpu"),
            std::string::npos);
  EXPECT_NE(LoadError(R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "outputs": [{"shape": [2], "dtype": "weird"}]}]})").find("weird"),
            std::string::npos);
  EXPECT_NE(LoadError(R"({"version": 99, "ops": []})").find("version 99"), std::string::npos);
}

TEST(GraphJsonTest, MalformedAndEmptyFilesAreErrors) {
  EXPECT_NE(LoadError("{\"version\": 1, \"ops\": [").find("not valid JSON"), std::string::npos);
  EXPECT_NE(LoadError("").find("empty"), std::string::npos);
  EXPECT_NE(LoadError("[1, 2]"), "");
  EXPECT_THROW(LoadGraphFile("/nonexistent/graph.json"), Error);
}

}  // namespace
}  // namespace devplace
