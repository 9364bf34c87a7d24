// The streaming graph reader (LoadGraphFile: one op's DOM at a time) against
// the DOM reader (GraphFromJson of the whole parsed file): on every input,
// valid or not, both give the same graph or the same error message. And the
// op-by-op writer (SaveGraphFile) against the whole document's dump.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "graph/graph_json.h"
#include "models/registry.h"
#include "test_util.h"
#include "util/error.h"
#include "util/files.h"
#include "util/json_stream.h"
#include "util/random.h"

namespace devplace {
namespace {

using nlohmann::json;
using testing::TempDir;

// "graph: <the graph as JSON>" or "error: <message>".
template <class Load>
std::string Outcome(Load load) {
  try {
    return "graph: " + GraphToJson(load()).dump();
  } catch (const Error& e) {
    return std::string("error: ") + e.what();
  }
}

// Both readers on `text`; returns the streaming reader's outcome.
std::string ExpectSameOutcome(const TempDir& dir, const std::string& text) {
  const std::string path = dir.Write("g.json", text);
  const std::string streamed = Outcome([&] { return LoadGraphFile(path); });
  const std::string whole = Outcome([&] { return GraphFromJson(ReadJsonFile(path), path); });
  EXPECT_EQ(streamed, whole) << "input: " << text.substr(0, 400);
  return streamed;
}

bool IsError(const std::string& outcome) { return outcome.rfind("error: ", 0) == 0; }

const char* kOp1 = R"({"id": 1, "name": "a", "type": "A", "outputs": [{"shape": [2]}]})";
const char* kOp2 = R"({"id": 2, "name": "b", "type": "B", "inputs": [1], "outputs": [{"shape": [2]}]})";

// The cases where reading op by op could change which problem is reported:
// top-level fields after the ops, repeated keys, problems in inputs against
// problems in later ops, syntax errors after a bad op.
TEST(GraphJsonStreamTest, ReportsTheSameProblemAsTheWholeDocumentReader) {
  TempDir dir;
  const std::string ops = std::string("[") + kOp1 + ", " + kOp2 + "]";
  const std::vector<std::string> cases = {
      // Valid, with the top-level fields before and after the ops.
      R"({"version": 1, "name": "g", "ops": )" + ops + "}",
      R"({"ops": )" + ops + R"(, "expert_stages": 0, "name": "g", "version": 1})",
      // A bad version after a bad op: the version is reported.
      R"({"ops": [{"id": 1}], "version": 7})",
      R"({"ops": [{"id": 1}]})",
      R"({"ops": [{"id": 1}], "version": 1, "name": 5})",
      R"({"ops": [{"id": 1, "name": "a", "type": "A"}], "version": 1, "expert_stages": -1})",
      // Repeated "ops": refused, as every repeated key, whatever the ops held.
      R"({"version": 1, "ops": [{"id": 1}], "ops": )" + ops + "}",
      R"({"version": 1, "ops": )" + ops + R"(, "ops": 5})",
      R"({"version": 1, "ops": 5, "ops": )" + ops + "}",
      R"({"version": 1, "ops": null})",
      R"({"version": 1, "ops": {"id": 1}})",
      // A repeated key inside an op, and an "ops" key inside an op.
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "name": "b", "type": "A", "ops": [1]}]})",
      // Both readers name the first key repeated, in document order: a
      // top-level key before the keys inside its second value, keys in an
      // output before a later repeated op field, and keys of a document
      // that is not an object; a syntax error still comes first.
      R"({"version": 1, "name": "g", "name": {"q": 1, "q": 2}, "ops": []})",
      R"({"version": 1, "ops": [{"id": 1, "outputs": [{"shape": [2], "shape": [3]}], "id": 2}]})",
      R"({"version": 1, "ops": [], "extra": {"a": {"b": 1, "b": 2}, "a": 3}})",
      R"([{"version": 1, "version": 1, "ops": []}])",
      R"({"version": 1, "ops": [{"id": 1, "id": 1}], "version": 1,})",
      // An input that does not resolve against a bad input further on, a bad
      // op further on, and a bad control input of the same op.
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "inputs": [9, "x"]}]})",
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "inputs": ["x", 9]}]})",
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "inputs": [9]}, {"id": 2}]})",
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "inputs": ["x"]}, {"id": 2}]})",
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "inputs": [9], "control_inputs": [true]}]})",
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "inputs": [2], "control_inputs": [true]},)" +
          std::string(kOp2) + "]}",
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "inputs": {"op": 1}}]})",
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "control_inputs": 3}]})",
      // An object input: its id resolves before its output is checked.
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "inputs": [{"op": 9, "output": -1}]}]})",
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "inputs": [{"op": 2, "output": -1}]},)" +
          std::string(kOp2) + "]}",
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "inputs": [{"output": 0}]}]})",
      R"({"version": 1, "ops": [{"id": 1, "name": "a", "type": "A", "inputs": [{"op": 2, "output": 5}]},)" +
          std::string(kOp2) + "]}",
      // Forward references and a duplicate id.
      R"({"version": 1, "ops": [)" + std::string(kOp2) + ", " + kOp1 + "]}",
      R"({"version": 1, "ops": [)" + std::string(kOp1) + ", " + kOp1 + "]}",
      // Syntax errors and numbers out of range after a bad op, and documents
      // that are not objects.
      R"({"version": 1, "ops": [{"id": 1}, {"id": 2,]})",
      R"({"version": 1, "ops": [{"id": 1}, {"flops": 1e400}]})",
      R"({"version": 1, "ops": []} {})",
      R"([{"version": 1, "ops": []}])",
      R"("graph")",
      R"(17)",
      R"({})",
      R"({"version": 1, "ops": []})",
      R"({"version": 1, "ops": [[1, 2], {"id": 1}]})",
  };
  for (const std::string& text : cases) ExpectSameOutcome(dir, text);
}

// Each graph file of the bad-input corpus, and a valid one.
TEST(GraphJsonStreamTest, AgreesOnTheBadInputCorpus) {
  TempDir dir;
  const std::filesystem::path corpus = std::filesystem::path(DEVPLACE_TEST_DATA).parent_path() / "bad_inputs";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(corpus)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("graph_", 0) != 0 && name != "good_graph.json") continue;
    ExpectSameOutcome(dir, testing::ReadFile(entry.path().string()));
    ++files;
  }
  EXPECT_GE(files, 10);
}

// Seeded random edits of valid graph files: deletions, insertions of JSON
// fragments that matter to the reader, and copies of one stretch over
// another. Each mutant reads the same both ways.
TEST(GraphJsonStreamTest, AgreesOnRandomlyMutatedFiles) {
  TempDir dir;
  Graph tiny = MakeModel("tiny");
  const std::vector<std::string> bases = {
      GraphToJson(tiny).dump(1),
      std::string(R"({"version": 1, "name": "g", "ops": [)") + kOp1 + ", " + kOp2 + "]}",
  };
  const std::vector<std::string> fragments = {
      "{", "}", "[", "]", ",", ":", "\"", "null", "-1", "1e400", "0", "7", "\"x\"", "true",
      R"("ops": [], )", R"("version": 2, )", R"("version": 1, )", R"({"id": 1}, )", R"("inputs": [99], )",
      R"("inputs": [{"op": 0, "output": 3}], )", R"("control_inputs": ["a"], )", R"("name": 5, )",
      R"("expert_stages": 2, )", R"("id": 0, )"};
  Random random(20261125);
  int loaded = 0, refused = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string text = bases[random.Below(bases.size())];
    const int edits = 1 + static_cast<int>(random.Below(3));
    for (int e = 0; e < edits; ++e) {
      const size_t at = random.Below(text.size() + 1);
      switch (random.Below(3)) {
        case 0: text.erase(at, 1 + random.Below(8)); break;
        case 1: text.insert(at, fragments[random.Below(fragments.size())]); break;
        default: {
          const size_t from = random.Below(text.size() + 1);
          text.replace(at, random.Below(40), text.substr(from, random.Below(40)));
        }
      }
    }
    (IsError(ExpectSameOutcome(dir, text)) ? refused : loaded)++;
  }
  // Both kinds of outcome were exercised.
  EXPECT_GT(loaded, 50);
  EXPECT_GT(refused, 500);
}

TEST(GraphWriterTest, WritesWhatTheWholeDocumentDumpWrites) {
  TempDir dir;
  // Every field: control inputs, several outputs, devices, aliases, names
  // that need escaping; and graphs of the built-in models.
  Graph hand;
  hand.name = "quote\" and\nnewline";
  Op a;
  a.id = 5;
  a.name = "a \"x\"";
  a.type = "VariableV2";
  a.persistent_bytes = 64;
  a.outputs = {TensorSpec::Make({4, 4}), TensorSpec::Make({2}, "int64")};
  a.outputs[0].aliases_persistent = true;
  a.device_kinds = MaskOf(DeviceKind::kCpu);
  a.colocation_group = "g";
  Op b;
  b.id = -3;
  b.name = "b";
  b.type = "Add";
  b.phase = Phase::kUpdate;
  b.flops = 1.5;
  b.temporary_bytes = 8;
  hand.AddOp(a);
  hand.AddOp(b);
  hand.AddDataEdge(0, 1, 1);
  hand.AddDataEdge(0, 0, 1);
  hand.AddControlEdge(0, 1);
  hand.Finalize("hand");
  Graph empty;
  empty.Finalize("empty");
  for (const Graph& graph : {hand, empty, MakeModel("tiny"), MakeModel("nmt", {{"length", 3}})}) {
    const std::string path = dir.File("g.json");
    SaveGraphFile(graph, path);
    EXPECT_EQ(testing::ReadFile(path), GraphToJson(graph).dump(1) + "\n") << graph.name;
    EXPECT_EQ(GraphToJson(LoadGraphFile(path)), GraphToJson(graph)) << graph.name;
  }
}

TEST(JsonStreamTest, HandsOverEachElementAndKeepsTheRest) {
  std::vector<json> elements;
  std::vector<int64_t> indices;
  int starts = 0;
  StreamedJson document = ParseJsonStreamingArray(
      R"({"a": {"b": [1, {"c": 2}]}, "ops": [1, {"x": [2]}, [3]], "z": "s"})", "doc", "ops", [&] { ++starts; },
      [&](json&& element, int64_t index) {
        elements.push_back(std::move(element));
        indices.push_back(index);
      });
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(indices, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(document.elements, 3);
  ASSERT_EQ(elements.size(), 3u);
  EXPECT_EQ(elements[1], json::parse(R"({"x": [2]})"));
  EXPECT_EQ(elements[2], json::parse("[3]"));
  EXPECT_EQ(document.top, json::parse(R"({"a": {"b": [1, {"c": 2}]}, "ops": [], "z": "s"})"));
  // A repeated "ops" (or any repeated key) is refused after the parse, as
  // ParseJson refuses it.
  EXPECT_THROW(ParseJsonStreamingArray(R"({"ops": [1], "ops": [2]})", "doc", "ops", [] {}, [](json&&, int64_t) {}), Error);
  // Errors are ParseJson's.
  for (const char* bad : {R"({"ops": [1, }])", R"({"ops": [1e400]})", "[[[[]]]", R"({"ops": [{"a": 1, "a": 1}]})",
                          R"({"z": 1, "ops": [], "z": 1})", R"([{"a": {"b": 1}, "a": 2}])"}) {
    std::string streamed, whole;
    try {
      ParseJsonStreamingArray(bad, "doc", "ops", [] {}, [](json&&, int64_t) {});
    } catch (const Error& e) {
      streamed = e.what();
    }
    try {
      ParseJson(bad, "doc");
    } catch (const Error& e) {
      whole = e.what();
    }
    EXPECT_NE(streamed, "") << bad;
    EXPECT_EQ(streamed, whole) << bad;
  }
}

}  // namespace
}  // namespace devplace
