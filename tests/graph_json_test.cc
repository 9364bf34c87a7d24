#include "graph/graph_json.h"

#include <gtest/gtest.h>

#include <limits>
#include <sys/stat.h>

#include "test_util.h"
#include "util/error.h"
#include "util/files.h"

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

// Ids, shapes and byte counts written as whole decimals (7.0, 1.28e3) are
// the integers they name, as in every devplace file; 7.5 is refused.
TEST(GraphJsonTest, WholeNumbersWrittenAsDecimalsAreIntegers) {
  std::string text = kValidGraph;
  auto replace = [&text](const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  replace(R"("id": 7,)", R"("id": 7.0,)");
  replace(R"("shape": [64, 128])", R"("shape": [64.0, 1.28e2])");
  replace(R"("bytes": 1280)", R"("bytes": 1.28e3)");
  replace(R"("inputs": [{"op": 7, "output": 0}])", R"("inputs": [{"op": 7e0, "output": 0.0}])");
  ASSERT_EQ(LoadError(text), "");
  TempDir dir;
  const Graph g = LoadGraphFile(dir.Write("g.json", text));
  ASSERT_EQ(g.num_ops(), 2);
  EXPECT_EQ(g.op(0).outputs[0].bytes, 64 * 128 * 4);
  EXPECT_EQ(g.op(1).outputs[0].bytes, 1280);
  ASSERT_EQ(g.data_edges().size(), 1u);
  replace(R"("id": 7.0,)", R"("id": 7.5,)");
  EXPECT_NE(LoadError(text).find("7.5"), std::string::npos) << LoadError(text);
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

// A one-op graph file with `fields` added to the op (a JSON fragment).
std::string OneOp(const std::string& fields) {
  return R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A")" + (fields.empty() ? "" : ", " + fields) + "}]}";
}

// The error is a devplace Error on one line that names the file.
void ExpectOneLineError(const std::string& message) {
  EXPECT_NE(message, "");
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.find("internal"), std::string::npos) << message;
}

TEST(GraphJsonHostileTest, DeepNestingIsAnErrorNotAStackOverflow) {
  for (const std::string& open_close : {std::string("[]"), std::string("{}")}) {
    std::string deep;
    for (int i = 0; i < 100000; ++i) deep += open_close[0] == '[' ? "[" : R"({"k":)";
    deep += "1";
    for (int i = 0; i < 100000; ++i) deep += open_close[1];
    std::string message = LoadError(OneOp(R"("devices": )" + deep));
    ExpectOneLineError(message);
    EXPECT_NE(message.find("nested more than 64 levels"), std::string::npos) << message;
  }
}

TEST(GraphJsonHostileTest, NestingLimitCountsOnlyBracketsOutsideStrings) {
  std::string nested(kMaxJsonDepth, '[');
  nested += std::string(kMaxJsonDepth, ']');
  EXPECT_NO_THROW(ParseJson(nested, "x"));
  EXPECT_THROW(ParseJson("[" + nested + "]", "x"), Error);
  // Brackets in names, even with escaped quotes before them, do not nest.
  const std::string name = R"(a\"[[[[)" + std::string(200, '[') + R"({{)";
  TempDir dir;
  Graph g = LoadGraphFile(dir.Write("g.json", OneOp(R"("colocation_group": ")" + name + "\"")));
  EXPECT_EQ(g.op(0).colocation_group.size(), 1 + 1 + 4 + 200 + 2u);
}

TEST(ReadTextFileTest, StopsAtTheLimitEvenForFilesThatNeverEnd) {
  try {
    ReadTextFile("/dev/zero", 1 << 20);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/zero"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1048576 bytes"), std::string::npos) << e.what();
  }
  TempDir dir;
  std::string path = dir.Write("big.json", std::string(1000, ' '));
  EXPECT_EQ(ReadTextFile(path, 1000).size(), 1000u);
  EXPECT_THROW(ReadTextFile(path, 999), Error);
  EXPECT_EQ(kMaxInputFileBytes, int64_t{1} << 30);
}

TEST(ReadTextFileTest, FoldersAndMissingFilesAreNamedErrors) {
  TempDir dir;
  for (const std::string& path : {dir.File(""), dir.File("missing.json"), std::string(5000, 'p')}) {
    try {
      ReadJsonFile(path);
      FAIL() << path;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      EXPECT_LT(std::string(e.what()).size(), 400u);  // the 5000-byte path is cut
    }
  }
}

TEST(ReadTextFileTest, AFifoWithNoWriterReadsAsEmptyInsteadOfWaiting) {
  TempDir dir;
  std::string path = dir.File("fifo");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_EQ(ReadTextFile(path), "");
  EXPECT_THROW(ReadJsonFile(path), Error);
}

TEST(GraphJsonHostileTest, NumbersOutsideDoubleRangeNameTheFile) {
  for (const char* number : {"1e400", "-1e400", "123456789e999"}) {
    std::string message = LoadError(OneOp(std::string(R"("flops": )") + number));
    ExpectOneLineError(message);
    EXPECT_NE(message.find("number"), std::string::npos) << message;
  }
}

TEST(GraphJsonHostileTest, EveryFieldOfTheWrongTypeIsANamedError) {
  const char* bad_ops[] = {
      R"("name": 5)", R"("type": [])", R"("phase": 5)", R"("flops": "x")", R"("flops": true)",
      R"("bytes_read": 1.5)", R"("bytes_written": "1")", R"("persistent_bytes": {})", R"("temporary_bytes": [1])",
      R"("outputs": {})", R"("outputs": [5])", R"("outputs": [{"shape": "x"}])", R"("outputs": [{"shape": [1.5]}])",
      R"("outputs": [{"shape": [[1]]}])", R"("outputs": [{"dtype": 5}])", R"("outputs": [{"bytes": 1.5}])",
      R"("outputs": [{"aliases_persistent": 1}])", R"("devices": "gpu")", R"("devices": [5])", R"("devices": [[]])",
      R"("colocation_group": 5)", R"("expert_stage": 0.5)", R"("inputs": 5)", R"("inputs": ["x"])",
      R"("inputs": [{"op": "x"}])", R"("inputs": [{"output": 0}])", R"("inputs": [{"op": 1.5}])",
      R"("control_inputs": 1)", R"("control_inputs": [{}])"};
  for (const char* fields : bad_ops) {
    SCOPED_TRACE(fields);
    std::string message = LoadError(OneOp(fields));
    ExpectOneLineError(message);
  }
  const char* bad_tops[] = {R"({"version": "1", "ops": []})", R"({"version": 1.5, "ops": []})",
                            R"({"version": 1, "ops": {}})",   R"({"version": 1, "ops": [], "name": 5})",
                            R"({"version": 1, "ops": [], "expert_stages": "2"})", R"({"version": 1, "ops": [5]})"};
  for (const char* text : bad_tops) {
    SCOPED_TRACE(text);
    ExpectOneLineError(LoadError(text));
  }
}

TEST(GraphJsonHostileTest, IntegersThatDoNotFitTheirFieldAreRejectedNotCut) {
  // 2^32 + 1 would become 1 in an int32; 2^64 - 1 would become -1 in an int64.
  std::string stage = LoadError(R"({"version": 1, "expert_stages": 2, "ops": [{"id": 1, "name": "a", "type": "A", "expert_stage": 4294967297}]})");
  EXPECT_NE(stage.find("'expert_stage'"), std::string::npos) << stage;
  std::string stages = LoadError(R"({"version": 1, "expert_stages": 4294967298, "ops": []})");
  EXPECT_NE(stages.find("'expert_stages'"), std::string::npos) << stages;
  std::string output = LoadError(R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "outputs": [{"shape": [1]}]},
      {"id": 2, "name": "b", "type": "A", "inputs": [{"op": 1, "output": 4294967296}]}]})");
  EXPECT_NE(output.find("'output'"), std::string::npos) << output;
  EXPECT_NE(LoadError(OneOp(R"("persistent_bytes": 9223372036854775808)")).find("'persistent_bytes'"), std::string::npos);
  EXPECT_NE(LoadError(R"({"version": 1, "ops": [{"id": 18446744073709551615, "name": "a", "type": "A"}]})").find("'id'"),
            std::string::npos);
  EXPECT_NE(LoadError(OneOp(R"("outputs": [{"shape": [18446744073709551615]}])")).find("shape"), std::string::npos);
  EXPECT_NE(LoadError(OneOp(R"("expert_stage": -2)")).find("'expert_stage'"), std::string::npos);
}

TEST(GraphJsonHostileTest, SizesThatOverflowAreRejected) {
  // 2^32 x 2^32 float32 elements: 2^66 bytes, which wraps to 0 unchecked.
  std::string shape = LoadError(OneOp(R"("outputs": [{"shape": [4294967296, 4294967296]}])"));
  ExpectOneLineError(shape);
  EXPECT_NE(shape.find("64 bits"), std::string::npos) << shape;
  // Two parameters of 2^63 - 1 bytes each wrap around when added.
  std::string sum = LoadError(R"({"version": 1, "ops": [
      {"id": 1, "name": "a", "type": "VariableV2", "persistent_bytes": 9223372036854775807},
      {"id": 2, "name": "b", "type": "VariableV2", "persistent_bytes": 9223372036854775807}]})");
  EXPECT_NE(sum.find("add up to more than 2^60 bytes"), std::string::npos) << sum;
  // One tensor consumed by many ops is counted once per edge.
  std::string edges = R"({"version": 1, "ops": [{"id": 0, "name": "big", "type": "A", "outputs": [{"bytes": 1152921504606846976}]})";
  edges += R"(, {"id": 1, "name": "c", "type": "A", "inputs": [0, 0]}]})";
  EXPECT_NE(LoadError(edges).find("add up"), std::string::npos);
  std::string negative = LoadError(OneOp(R"("outputs": [{"shape": [2, -3]}])"));
  EXPECT_NE(negative.find("shape dimensions"), std::string::npos) << negative;
  EXPECT_NE(LoadError(OneOp(R"("outputs": [{"shape": [2], "bytes": -8}])")).find("'bytes'"), std::string::npos);
  // Bytes given do not excuse a shape of more elements than 64 bits count,
  // with or without a dtype devplace knows; an empty one is fine.
  for (const char* dtype : {"float32", "bfloat8x"}) {
    const std::string huge = LoadError(OneOp(std::string(R"("outputs": [{"dtype": ")") + dtype +
                                             R"(", "shape": [4294967296, 4294967296], "bytes": 8}])"));
    EXPECT_NE(huge.find("element count does not fit"), std::string::npos) << huge;
  }
  EXPECT_EQ(LoadError(OneOp(R"("outputs": [{"shape": [4294967296, 4294967296, 0]}])")), "");
  EXPECT_NE(LoadError(OneOp(R"("flops": 1e308}, {"id": 2, "name": "b", "type": "A", "flops": 1e308)")).find("flops"),
            std::string::npos);
}

TEST(GraphHostileTest, TensorSizesAreChecked) {
  EXPECT_EQ(TensorSpec::Make({64, 128}).bytes, 64 * 128 * 4);
  EXPECT_EQ(TensorSpec::CheckedBytes(std::vector<int64_t>{int64_t{1} << 32, int64_t{1} << 32}, 4), std::nullopt);
  EXPECT_EQ(TensorSpec::CheckedBytes(std::vector<int64_t>{2, -3}, 4), std::nullopt);
  EXPECT_EQ(TensorSpec::CheckedBytes(std::vector<int64_t>{0, int64_t{1} << 62}, 8), 0);
  // Empty wherever the zero stands; a negative dimension is refused even so.
  EXPECT_EQ(TensorSpec::CheckedBytes(std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40, 0}, 8), 0);
  EXPECT_EQ(TensorSpec::CheckedBytes(std::vector<int64_t>{0, -1}, 4), std::nullopt);
  EXPECT_EQ(TensorSpec::Make({int64_t{1} << 40, int64_t{1} << 40, 0}).bytes, 0);
  EXPECT_THROW(TensorSpec::Make({int64_t{1} << 32, int64_t{1} << 32}), Error);
  EXPECT_THROW(TensorSpec::Make({-1}), Error);
}

TEST(GraphHostileTest, NonFiniteFlopsBuiltInCodeAreRejected) {
  for (double flops : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    Graph g;
    Op op;
    op.name = "a";
    op.flops = flops;
    g.AddOp(op);
    EXPECT_THROW(g.Finalize("built"), Error);
  }
}

TEST(GraphJsonHostileTest, NamesInMessagesAreEscapedAndTruncated) {
  // A newline in a name must not split the message.
  std::string duplicate = LoadError(R"({"version": 1, "ops": [{"id": 1, "name": "x\ny", "type": "A"},
      {"id": 2, "name": "x\ny", "type": "A"}]})");
  ExpectOneLineError(duplicate);
  EXPECT_NE(duplicate.find("x\\ny"), std::string::npos) << duplicate;
  for (const char* fields : {R"("phase": "a\nb")", R"("devices": ["a\nb"])", R"("outputs": [{"dtype": "a\nb"}])"}) {
    ExpectOneLineError(LoadError(OneOp(fields)));
  }
  // An 8 MiB name is cut in the message.
  const std::string huge(8 << 20, 'n');
  std::string message = LoadError(R"({"version": 1, "ops": [{"id": 1, "name": ")" + huge + R"(", "type": "A", "flops": "x"}]})");
  EXPECT_NE(message.find("'flops'"), std::string::npos);
  EXPECT_LT(message.size(), 1000u);
  // And so is a hostile file name.
  TempDir dir;
  std::string path = dir.Write("bad\nname.json", "{");
  try {
    LoadGraphFile(path);
    FAIL();
  } catch (const Error& e) {
    ExpectOneLineError(e.what());
    EXPECT_NE(std::string(e.what()).find("bad\\nname.json"), std::string::npos) << e.what();
  }
}

TEST(GraphJsonHostileTest, NonUtf8StringsAreErrorsNotExceptions) {
  // The parser rejects such bytes in a file; a document built in code can
  // still hold them, and neither reading nor the error may dump them.
  nlohmann::json document = nlohmann::json::parse(OneOp(R"("devices": ["gpu"])"));
  document["ops"][0]["devices"][0] = "\xff\xfe";
  EXPECT_THROW(GraphFromJson(document, "doc"), Error);
  document["ops"][0]["devices"][0] = "gpu";
  document["ops"][0]["name"] = "bad\xff";
  try {
    GraphFromJson(document, "doc");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos) << e.what();
  }
  document["ops"][0]["name"] = "a";
  document["name"] = "\xc3";
  EXPECT_THROW(GraphFromJson(document, "doc"), Error);
  EXPECT_NE(LoadError("{\"version\": 1, \"ops\": [], \"name\": \"\xff\"}").find("not valid JSON"), std::string::npos);
  // A graph built in code and never finalized cannot be saved with a bad name.
  Graph g;
  Op op;
  op.name = "bad\xff";
  g.AddOp(op);
  TempDir dir;
  EXPECT_THROW(SaveGraphFile(g, dir.File("g.json")), Error);
}

}  // namespace
}  // namespace devplace
