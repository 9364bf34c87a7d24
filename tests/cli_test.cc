// End-to-end tests of the devplace program: exit codes, messages, files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>

#include "run_devplace.h"
#include "test_util.h"

namespace devplace {
namespace {

using testing::ExpectCleanError;
using testing::Outcome;
using testing::TempDir;

Outcome Devplace(const std::string& args) { return testing::RunDevplace(args); }

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(CliTest, HelpListsEverySubcommand) {
  Outcome o = Devplace("--help");
  EXPECT_EQ(o.exit_code, 0);
  for (const char* sub : {"simulate", "clusters", "models", "info", "place", "train", "pretrain"}) EXPECT_NE(o.out.find(sub), std::string::npos) << sub;
  Outcome sim = Devplace("simulate --help");
  EXPECT_EQ(sim.exit_code, 0);
  for (const char* flag : {"--graph", "--cluster", "--placement", "--trace", "--json", "--op-times", "--jitter",
                           "--failure-probability", "--seed", "--steps"}) {
    EXPECT_NE(sim.out.find(flag), std::string::npos) << flag;
  }
}

TEST(CliTest, SimulatePrintsStepTimeAndDeviceTable) {
  Outcome o = Devplace("simulate --graph tiny --cluster k80x2 --placement single:gpu:0");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("step time:"), std::string::npos);
  for (const char* device : {"cpu:0", "gpu:0", "gpu:1"}) EXPECT_NE(o.out.find(device), std::string::npos);
  EXPECT_NE(o.out.find("peak_memory"), std::string::npos);
}

TEST(CliTest, SimulateJsonHasTheDocumentedFields) {
  Outcome o = Devplace("simulate --graph tiny --cluster k80x4 --placement single:gpu:1 --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_GT(j["step_time_s"].get<double>(), 0);
  EXPECT_FALSE(j["oom"].get<bool>());
  EXPECT_FALSE(j["invalid"].get<bool>());
  ASSERT_EQ(j["devices"].size(), 5u);
  for (const auto& d : j["devices"]) {
    for (const char* key : {"name", "compute_s", "copy_s", "peak_memory_bytes", "memory_capacity_bytes"}) {
      EXPECT_TRUE(d.contains(key)) << key;
    }
  }
  EXPECT_GT(j["devices"][2]["compute_s"].get<double>(), 0);  // gpu:1 did the work
}

TEST(CliTest, InvalidPlacementIsReportedInJson) {
  TempDir dir;
  std::string graph = dir.Write("g.json", R"({"version": 1, "ops": [
      {"id": 1, "name": "input", "type": "IteratorGetNext", "devices": ["cpu"], "outputs": [{"shape": [8]}]},
      {"id": 2, "name": "mm", "type": "MatMul", "flops": 1e6, "outputs": [{"shape": [8]}], "inputs": [1]}]})");
  std::string placement = dir.Write("p.json", R"({"placement": {"input": "gpu:0", "mm": "gpu:0"}})");
  Outcome o = Devplace("simulate --cluster k80x2 --json --graph " + graph + " --placement " + placement);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_TRUE(j["invalid"].get<bool>());
  EXPECT_TRUE(j["step_time_s"].is_null());
  EXPECT_NE(j["reason"].get<std::string>().find("'input'"), std::string::npos);
  EXPECT_NE(j["reason"].get<std::string>().find("cannot run on gpu:0"), std::string::npos);
}

TEST(CliTest, TraceIsChromeTraceJsonWithDeviceAndLinkLanes) {
  TempDir dir;
  std::string trace = dir.File("trace.json");
  Outcome o = Devplace("simulate --graph tiny --cluster k80x2 --placement single:gpu:0 --trace " + trace);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(trace));
  int ops = 0, transfers = 0, counters = 0, process_names = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") (e["cat"] == "transfer" ? transfers : ops)++;
    if (e["ph"] == "C") ++counters;
    if (e["ph"] == "M" && e["name"] == "process_name") ++process_names;
  }
  EXPECT_EQ(ops, 50);
  EXPECT_GT(transfers, 0);  // the CPU-only input goes to gpu:0
  EXPECT_GT(counters, 0);
  EXPECT_EQ(process_names, 4);  // three devices and the links
}

TEST(CliTest, OutOfMemoryIsFlagged) {
  TempDir dir;
  std::string cluster = dir.Write("small.json", R"({"version": 1, "devices": [
      {"name": "gpu:0", "kind": "gpu", "peak_tflops": 1, "memory_bandwidth_gb_per_s": 100, "memory_bytes": 1000},
      {"name": "cpu:0", "kind": "cpu", "peak_tflops": 1, "memory_bandwidth_gb_per_s": 100, "memory_bytes": 1000000000000}],
      "links": [{"between": ["cpu:0", "gpu:0"], "bandwidth_gb_per_s": 10}]})");
  Outcome o = Devplace("simulate --graph tiny --placement single:gpu:0 --json --cluster " + cluster);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_TRUE(j["oom"].get<bool>());
  EXPECT_TRUE(j["devices"][0]["oom"].get<bool>());
}

TEST(CliTest, NoisyRunsRepeatWithTheSameSeed) {
  std::string args = "simulate --graph tiny --cluster k80x2 --placement single:gpu:0 --json --jitter 0.1 --steps 5 --seed 9";
  Outcome a = Devplace(args);
  Outcome b = Devplace(args);
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_TRUE(nlohmann::json::parse(a.out).contains("single_step_time_s"));
}

TEST(CliTest, BadInputsGiveOneLineErrors) {
  TempDir dir;
  ExpectCleanError(Devplace("simulate --graph /no/such.json --cluster k80x2 --placement single:gpu:0"), "/no/such.json");
  ExpectCleanError(Devplace("simulate --graph tiny --cluster k80x9 --placement single:gpu:0"), "k80x9");
  ExpectCleanError(Devplace("simulate --graph tiny --cluster k80x2 --placement single:gpu:7"), "gpu:7");
  std::string cyclic = dir.Write("cyclic.json", R"({"version": 1, "ops": [
      {"id": 1, "name": "a", "type": "Add", "outputs": [{"shape": [1]}], "inputs": [2]},
      {"id": 2, "name": "b", "type": "Add", "outputs": [{"shape": [1]}], "inputs": [1]}]})");
  ExpectCleanError(Devplace("simulate --graph " + cyclic + " --cluster k80x2 --placement single:gpu:0"), "cycle");
  std::string malformed = dir.Write("bad.json", "{\"version\": 1, \"ops\": [");
  ExpectCleanError(Devplace("simulate --graph " + malformed + " --cluster k80x2 --placement single:gpu:0"), "bad.json");
  ExpectCleanError(Devplace("simulate --graph tiny --cluster k80x2 --placement " + malformed), "bad.json");
  ExpectCleanError(Devplace("simulate --graph tiny --cluster k80x2 --placement single:gpu:0 --op-times " + malformed),
                   "bad.json");
  ExpectCleanError(Devplace("simulate --graph tiny --cluster k80x2"), "--placement");
  ExpectCleanError(Devplace("simulate --graph tiny --cluster k80x2 --placement single:gpu:0 --bogus"), "--bogus");
  ExpectCleanError(Devplace("simulate --graph tiny --cluster k80x2 --placement single:gpu:0 --jitter -1"), "jitter");
  ExpectCleanError(Devplace("frobnicate"), "frobnicate");
}

// An empty --failing-signal is not "the method's default": it is refused,
// and the run writes nothing.
TEST(CliTest, EmptyFailingSignalIsRefused) {
  TempDir dir;
  const std::string out = dir.File("run");
  ExpectCleanError(Devplace("place --graph tiny --cluster k80x2 --max-steps 1 --method hdp --failing-signal '' --out " + out),
                   "--failing-signal");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CliTest, FailedRunLeavesNoTraceBehind) {
  TempDir dir;
  std::string trace = dir.File("trace.json");
  Outcome o = Devplace("simulate --graph tiny --cluster k80x2 --placement single:gpu:9 --trace " + trace);
  EXPECT_NE(o.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(trace));
  for (const auto& entry : std::filesystem::directory_iterator(dir.File(""))) {
    ADD_FAILURE() << "left behind: " << entry.path();
  }
}

TEST(CliTest, CompareJsonHasARowPerMethodWithTheDocumentedFields) {
  Outcome o = Devplace("compare --graph tiny --cluster k80x2 --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  nlohmann::json rows = nlohmann::json::parse(o.out);
  ASSERT_EQ(rows.size(), 13u);
  std::set<std::string> methods;
  for (const auto& row : rows) {
    for (const char* key : {"method", "step_time_s", "oom", "invalid", "placer_seconds", "lower_bound_s"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
    methods.insert(row["method"].get<std::string>());
    if (!row["invalid"].get<bool>() && !row["oom"].get<bool>()) {
      EXPECT_GE(row["step_time_s"].get<double>(), row["lower_bound_s"].get<double>() * 0.999) << row.dump();
    }
  }
  for (const char* m : {"single_cpu", "single_gpu", "expert", "scotch", "mincut", "metis", "m_topo", "m_etf", "m_sct",
                        "dp_split", "exact", "mcmc", "random"}) {
    EXPECT_TRUE(methods.count(m)) << m;
  }
}

// On 64 devices: METIS prints warnings to stdout when asked for many parts
// of a small graph (NMT: "***Cannot bisect a graph with 0 vertices!"), and
// they must not reach devplace's stdout, which --json promises is one JSON
// document; and a table row listing 64 devices' memory is longer than any
// fixed buffer, so it must not be cut (with its newline) into the next.
TEST(CliTest, CompareOnSixtyFourDevicesKeepsItsOutputWhole) {
  TempDir dir;
  nlohmann::json devices = nlohmann::json::array();
  nlohmann::json links = nlohmann::json::array();
  devices.push_back({{"name", "cpu:0"}, {"kind", "cpu"}, {"peak_tflops", 1}, {"memory_bandwidth_gb_per_s", 60}, {"memory_gib", 64}});
  for (int g = 0; g < 63; ++g) {
    const std::string name = "gpu:" + std::to_string(g);
    devices.push_back({{"name", name}, {"kind", "gpu"}, {"peak_tflops", 10}, {"memory_bandwidth_gb_per_s", 700}, {"memory_gib", 16}});
    links.push_back({{"between", {"cpu:0", name}}, {"bandwidth_gb_per_s", 12}, {"latency_us", 10}});
  }
  const nlohmann::json cluster = {{"format", "devplace-cluster"}, {"version", 1}, {"devices", devices}, {"links", links}};
  const std::string path = dir.Write("c64.json", cluster.dump());
  Outcome json = Devplace("compare --graph nmt --cluster " + path + " --methods metis --json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  EXPECT_EQ(json.out.find("***"), std::string::npos) << json.out.substr(0, 400);
  nlohmann::json rows = nlohmann::json::parse(json.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(rows.is_array()) << json.out.substr(0, 400);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["method"], "metis");
  EXPECT_FALSE(rows[0]["invalid"].get<bool>());

  Outcome table = Devplace("compare --graph nmt --cluster " + path + " --methods m_etf,dp_split");
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_EQ(table.out.find("***"), std::string::npos);
  for (const char* row : {"\nm_etf ", "\ndp_split "}) EXPECT_NE(table.out.find(row), std::string::npos) << row << table.out;
}

// The table names each note's method once: a placer's note says what
// happened, and the table puts the method's name before it.
TEST(CliTest, CompareNotesNameTheirMethodOnce) {
  Outcome o = Devplace("compare --graph tiny --cluster k80x2 --methods expert,exact,mcmc --max-evaluations 300");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const size_t notes = o.out.find("\nnotes:\n");
  ASSERT_NE(notes, std::string::npos) << o.out;
  std::istringstream lines(o.out.substr(notes + 8));
  int checked = 0;
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string method = line.substr(0, colon);
    method.erase(0, method.find_first_not_of(' '));
    EXPECT_NE(line.substr(colon + 2).rfind(method + ":", 0), 0u) << line;
    ++checked;
  }
  EXPECT_GE(checked, 3) << o.out;
}

// ---- Searches and memory (issue 47) ----

// A chain of 12 layers of 100 MB parameters passing 30 MB tensors, on two
// 1 GB GPUs joined at 1 GB/s: all on one GPU is the fastest step and out of
// memory, m-ETF's split fits. mcmc's answer, through compare and place,
// fits (it started from single_gpu and answered out of memory before), and
// so does every other search's and every learned method's through place.
TEST(CliTest, SearchesAnswerAPlacementThatFitsWhereTheFastestBaselineDoesNot) {
  TempDir dir;
  nlohmann::json ops = nlohmann::json::array();
  for (int i = 0; i < 12; ++i) {
    nlohmann::json op = {{"id", i}, {"name", "layer" + std::to_string(i)}, {"type", "MatMul"}, {"flops", 1e9},
                         {"outputs", {{{"shape", {7500000}}, {"bytes", 30000000}}}}, {"persistent_bytes", 100000000}};
    if (i > 0) op["inputs"] = {i - 1};
    ops.push_back(op);
  }
  const std::string graph = dir.Write("chain.json", nlohmann::json({{"format", "devplace-graph"}, {"version", 1}, {"ops", ops}}).dump());
  nlohmann::json devices = {
      {{"name", "cpu:0"}, {"kind", "cpu"}, {"peak_tflops", 0.1}, {"memory_bandwidth_gb_per_s", 50}, {"memory_gib", 64}},
      {{"name", "gpu:0"}, {"kind", "gpu"}, {"peak_tflops", 1}, {"memory_bandwidth_gb_per_s", 500}, {"memory_bytes", 1000000000}},
      {{"name", "gpu:1"}, {"kind", "gpu"}, {"peak_tflops", 1}, {"memory_bandwidth_gb_per_s", 500}, {"memory_bytes", 1000000000}}};
  nlohmann::json links = nlohmann::json::array();
  for (auto [a, b] : {std::pair{"cpu:0", "gpu:0"}, {"cpu:0", "gpu:1"}, {"gpu:0", "gpu:1"}}) {
    links.push_back({{"between", {a, b}}, {"bandwidth_gb_per_s", 1}, {"latency_us", 10}});
  }
  const std::string cluster =
      dir.Write("two_small_gpus.json", nlohmann::json({{"format", "devplace-cluster"}, {"version", 1}, {"devices", devices}, {"links", links}}).dump());

  Outcome o = Devplace("compare --graph " + graph + " --cluster " + cluster + " --methods single_gpu,m_etf,mcmc --json --max-evaluations 300");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const nlohmann::json rows = nlohmann::json::parse(o.out);
  ASSERT_EQ(rows.size(), 3u);
  ASSERT_TRUE(rows[0]["oom"].get<bool>()) << rows[0].dump();  // single_gpu: the case needs it out of memory
  ASSERT_FALSE(rows[1]["oom"].get<bool>()) << rows[1].dump();  // m_etf fits
  EXPECT_EQ(rows[2]["method"], "mcmc");
  EXPECT_FALSE(rows[2]["oom"].get<bool>()) << rows[2].dump();
  EXPECT_LE(rows[2]["step_time_s"].get<double>(), rows[1]["step_time_s"].get<double>()) << rows[2].dump();

  for (const char* method : {"mcmc", "exact", "guided", "rl", "hdp", "gdp", "mars"}) {
    Outcome place = Devplace("place --graph " + graph + " --cluster " + cluster + " --method " + method +
                             " --max-samples 300 --json --out " + dir.File(std::string("run_") + method));
    ASSERT_EQ(place.exit_code, 0) << place.out;
    const nlohmann::json j = nlohmann::json::parse(place.out);
    EXPECT_FALSE(j["oom"].get<bool>()) << method << ": " << j.dump();
    EXPECT_FALSE(j["step_time_s"].is_null()) << method << ": " << j.dump();
  }
}

// The packing puzzle (tests/memory_cases.h) through place: every one-shot
// baseline overflows three 1 GB GPUs, and each learned method (and guided)
// answers a placement that fits on seeds 1-3 within 600 samples, the
// learned ones through their finishing search (issue 49), which says what
// it spent in --json.
TEST(CliTest, EveryLearnedMethodFitsThePackingPuzzle) {
  TempDir dir;
  nlohmann::json ops = nlohmann::json::array();
  int id = 0;
  for (int64_t mb : {221, 15, 107, 717, 90, 125, 104, 106, 270, 36, 552, 122, 47, 187, 271}) {
    ops.push_back({{"id", id}, {"name", "param" + std::to_string(id)}, {"type", "MatMul"}, {"flops", 1e10},
                   {"outputs", {{{"shape", {1000}}, {"bytes", 4000}}}}, {"persistent_bytes", mb * 1000000}});
    ++id;
  }
  const std::string graph = dir.Write("packing.json", nlohmann::json({{"format", "devplace-graph"}, {"version", 1}, {"ops", ops}}).dump());
  nlohmann::json devices = nlohmann::json::array();
  for (int d = 0; d < 3; ++d) {
    devices.push_back({{"name", "gpu:" + std::to_string(d)}, {"kind", "gpu"}, {"peak_tflops", 1},
                       {"memory_bandwidth_gb_per_s", 1e9}, {"memory_bytes", 1000000000}});
  }
  nlohmann::json links = nlohmann::json::array();
  for (auto [a, b] : {std::pair{"gpu:0", "gpu:1"}, {"gpu:0", "gpu:2"}, {"gpu:1", "gpu:2"}}) {
    links.push_back({{"between", {a, b}}, {"bandwidth_gb_per_s", 1}, {"latency_us", 10}});
  }
  const std::string cluster =
      dir.Write("three_gpus.json", nlohmann::json({{"format", "devplace-cluster"}, {"version", 1}, {"devices", devices}, {"links", links}}).dump());
  Outcome baselines = Devplace("compare --graph " + graph + " --cluster " + cluster + " --json");
  ASSERT_EQ(baselines.exit_code, 0) << baselines.out;
  for (const nlohmann::json& row : nlohmann::json::parse(baselines.out)) {
    if (row["method"] != "mcmc" && row["method"] != "exact") ASSERT_TRUE(row["oom"].get<bool>()) << "the case needs every baseline out of memory: " << row.dump();
  }
  for (const char* method : {"guided", "rl", "hdp", "gdp", "mars"}) {
    for (int seed = 1; seed <= 3; ++seed) {
      const std::string name = std::string(method) + "-" + std::to_string(seed);
      Outcome place = Devplace("place --graph " + graph + " --cluster " + cluster + " --method " + method +
                               " --max-samples 600 --json --seed " + std::to_string(seed) + " --out " + dir.File(name));
      ASSERT_EQ(place.exit_code, 0) << name << ": " << place.out;
      const nlohmann::json j = nlohmann::json::parse(place.out);
      EXPECT_FALSE(j["oom"].get<bool>()) << name << ": " << j.dump();
      if (std::string(method) == "guided") continue;
      // The chain's restart may take one evaluation past its budget.
      EXPECT_LE(j["samples"].get<int64_t>(), 601) << name;
      EXPECT_EQ(j["search_after"], "mcmc") << name;
      EXPECT_GT(j["search_samples"].get<int64_t>(), 0) << name;
      EXPECT_TRUE(j.contains("placement_from_search")) << name;
    }
  }
}

// Issue 50: a policy with a budget of samples places zero-shot, then
// guided's chain searches from that placement for the rest of the budget
// (never slower than the zero-shot placement: the chain keeps its start
// unless it finds a faster one); --fine-tune trains instead.
TEST(CliTest, APolicyWithABudgetPlacesZeroShotThenSearches) {
  TempDir dir;
  const std::string place = "place --graph tiny --cluster k80x2 --method gdp --policy shipped --json --seed 2 --out ";
  Outcome zero = Devplace(place + dir.File("zero"));
  ASSERT_EQ(zero.exit_code, 0) << zero.out;
  const nlohmann::json z = nlohmann::json::parse(zero.out);
  EXPECT_TRUE(z["search_after"].is_null()) << z.dump();
  Outcome searched = Devplace(place + dir.File("searched") + " --max-samples 200");
  ASSERT_EQ(searched.exit_code, 0) << searched.out;
  const nlohmann::json j = nlohmann::json::parse(searched.out);
  EXPECT_TRUE(j["zero_shot"].get<bool>()) << j.dump();
  EXPECT_EQ(j["search_after"], "guided") << j.dump();
  EXPECT_GT(j["search_samples"].get<int64_t>(), 0) << j.dump();
  EXPECT_LE(j["samples"].get<int64_t>(), 201) << j.dump();  // a restart may take one past
  EXPECT_EQ(j["samples"].get<int64_t>(), z["samples"].get<int64_t>() + j["search_samples"].get<int64_t>()) << j.dump();
  EXPECT_LE(j["step_time_s"].get<double>(), z["step_time_s"].get<double>()) << j.dump();
  Outcome tuned = Devplace(place + dir.File("tuned") + " --max-samples 60 --samples-per-step 4 --fine-tune");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out;
  const nlohmann::json t = nlohmann::json::parse(tuned.out);
  EXPECT_FALSE(t["zero_shot"].get<bool>()) << t.dump();
  EXPECT_EQ(t["search_after"], "mcmc") << t.dump();
  ExpectCleanError(Devplace("place --graph tiny --cluster k80x2 --method gdp --max-samples 60 --fine-tune --out " + dir.File("no")),
                   "--fine-tune");
}

// ---- end of searches and memory ----

// place names a search's budget --max-samples, compare --max-evaluations;
// each takes the other's name too (place refused --max-evaluations with a
// message about an unexpected "200").
TEST(CliTest, SearchBudgetsTakeEitherName) {
  TempDir dir;
  Outcome place = Devplace("place --graph tiny --cluster k80x2 --method mcmc --max-evaluations 37 --out " + dir.File("run"));
  ASSERT_EQ(place.exit_code, 0) << place.out;
  EXPECT_NE(place.out.find("(37 samples)"), std::string::npos) << place.out;
  auto notes = [](const std::string& out) { return out.substr(out.find("\nnotes:\n")); };
  Outcome by_evaluations = Devplace("compare --graph tiny --cluster k80x2 --methods mcmc --max-evaluations 41");
  Outcome by_samples = Devplace("compare --graph tiny --cluster k80x2 --methods mcmc --max-samples 41");
  ASSERT_EQ(by_samples.exit_code, 0) << by_samples.out;
  EXPECT_EQ(notes(by_samples.out), notes(by_evaluations.out));
}

TEST(CliTest, CompareTableShowsBoundSpeedupsAndChosenMethods) {
  Outcome o = Devplace("compare --graph tiny --cluster k80x4 --methods single_gpu,m_etf");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("lower bound"), std::string::npos);
  EXPECT_NE(o.out.find("1.00x"), std::string::npos);  // single_gpu against itself
  EXPECT_NE(o.out.find("m_etf"), std::string::npos);
  EXPECT_EQ(o.out.find("scotch"), std::string::npos);
  ExpectCleanError(Devplace("compare --graph tiny --cluster k80x4 --methods m_etf,magic"), "magic");
}

// A run's results are never replaced unasked: a second run into a folder
// holding one is refused (and the first run's placement stays as it was),
// the default folder included, and --overwrite replaces it. Trained files
// (a GDP policy, a Mars encoder) alike.
TEST(CliTest, ASecondRunNeverReplacesAPreviousOneUnasked) {
  TempDir dir;
  const std::string out = dir.File("run");
  ASSERT_EQ(Devplace("place --graph tiny --cluster k80x2 --method mcmc --max-samples 200 --out " + out).exit_code, 0);
  const std::string found = ReadText(out + "/best_placement.json");
  ASSERT_FALSE(found.empty());
  for (const char* method : {"m_etf", "rl --max-steps 1", "mcmc --max-samples 10"}) {
    ExpectCleanError(Devplace("place --graph rnnlm --cluster k80x2 --method " + std::string(method) + " --out " + out),
                     "holds a previous run");
    EXPECT_EQ(ReadText(out + "/best_placement.json"), found) << method;
  }
  ExpectCleanError(Devplace("place --graph tiny --cluster k80x2 --method m_etf --resume --out " + out), "no checkpoint");
  ExpectCleanError(Devplace("place --method rl --graph tiny --cluster k80x2 --max-steps 1 --resume --overwrite --out " + out), "not both");
  EXPECT_EQ(ReadText(out + "/best_placement.json"), found);
  Outcome replaced = Devplace("place --graph tiny --cluster k80x2 --method single_gpu --overwrite --out " + out);
  ASSERT_EQ(replaced.exit_code, 0) << replaced.out;
  EXPECT_NE(ReadText(out + "/best_placement.json"), found);

  // The default folder, runs/GRAPH-CLUSTER-METHOD: written once, then refused.
  const std::string in_dir = "cd " + dir.File("") + " && " + DEVPLACE_BINARY + " place --graph tiny --cluster k80x2 --method m_etf";
  Outcome first = testing::RunCommand(in_dir);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("runs/tiny-k80x2-m_etf/best_placement.json"), std::string::npos) << first.out;
  ExpectCleanError(testing::RunCommand(in_dir), "runs/tiny-k80x2-m_etf: holds a previous run");
  EXPECT_EQ(testing::RunCommand(in_dir + " --overwrite").exit_code, 0);

  const std::string policy = dir.File("policy.pt");
  ASSERT_EQ(Devplace("train --graphs tiny --cluster k80x2 --max-steps 1 --quiet -o " + policy).exit_code, 0);
  const std::string trained = ReadText(policy);
  ExpectCleanError(Devplace("train --graphs tiny --cluster k80x2 --max-steps 1 --quiet -o " + policy), "holds a trained policy");
  EXPECT_EQ(ReadText(policy), trained);
  EXPECT_EQ(Devplace("train --graphs tiny --cluster k80x2 --max-steps 1 --quiet --overwrite -o " + policy).exit_code, 0);
  const std::string encoder = dir.Write("encoder.pt", "any file");
  ExpectCleanError(Devplace("pretrain --graphs tiny --max-steps 1 --quiet -o " + encoder), "holds a trained encoder");
  EXPECT_EQ(ReadText(encoder), "any file");
}

// A search placer spends --max-samples as evaluations, reports them, and
// gives the same placement for the same seed.
TEST(CliTest, PlaceWithMcmcSpendsItsEvaluationBudgetDeterministically) {
  TempDir dir;
  std::string placements[2];
  for (int i = 0; i < 2; ++i) {
    const std::string out = dir.File("run" + std::to_string(i));
    Outcome o = Devplace("place --graph rnnlm --cluster k80x2 --method mcmc --max-samples 120 --seed 4 --json --out " + out);
    ASSERT_EQ(o.exit_code, 0) << o.out;
    nlohmann::json j = nlohmann::json::parse(o.out);  // --json: nothing else is printed
    EXPECT_EQ(j["samples"].get<int64_t>(), 120);
    EXPECT_GT(j["step_time_s"].get<double>(), 0);
    std::ifstream file(out + "/best_placement.json");
    placements[i] = std::string(std::istreambuf_iterator<char>(file), {});
  }
  EXPECT_FALSE(placements[0].empty());
  EXPECT_EQ(placements[0], placements[1]);
  Outcome text = Devplace("place --graph tiny --cluster k80x2 --method mcmc --max-samples 300 --out " + dir.File("text"));
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("300 samples"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("evaluations  best"), std::string::npos) << text.out;  // the progress line
}

TEST(CliTest, PlaceWithRlWritesPlacementCurveAndCheckpointAndResumes) {
  TempDir dir;
  std::string out = dir.File("run");
  Outcome o = Devplace("place --method rl --graph tiny --cluster k80x2 --max-steps 3 --json --out " + out);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["method"], "rl");
  EXPECT_GT(j["step_time_s"].get<double>(), 0);
  EXPECT_FALSE(j["oom"].get<bool>());
  EXPECT_EQ(j["samples"].get<int64_t>(), 48);  // 3 steps of the default K = 16
  EXPECT_GE(j["search_seconds"].get<double>(), 0);
  std::string placement = j["placement_file"].get<std::string>();
  EXPECT_TRUE(std::filesystem::exists(placement));
  EXPECT_TRUE(std::filesystem::exists(out + "/curve.csv"));
  EXPECT_TRUE(std::filesystem::exists(out + "/checkpoint.pt"));
  // The placement file is one `simulate` accepts, and it gives the same time.
  Outcome sim = Devplace("simulate --graph tiny --cluster k80x2 --json --placement " + placement);
  ASSERT_EQ(sim.exit_code, 0) << sim.out;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(sim.out)["step_time_s"].get<double>(), j["step_time_s"].get<double>());

  Outcome resumed = Devplace("place --method rl --graph tiny --cluster k80x2 --max-steps 5 --json --resume --out " + out);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_EQ(nlohmann::json::parse(resumed.out)["samples"].get<int64_t>(), 80);  // continued from 48
  ExpectCleanError(Devplace("place --method rl --graph tiny --cluster k80x4 --max-steps 1 --resume --out " + out), "another graph or cluster");
  ExpectCleanError(Devplace("place --method rl --graph tiny --cluster k80x2 --max-steps 6 --resume --encoder-hidden 8 --out " + out),
                   "is of another architecture");
}

// Everything wrong with a place command's inputs is found before the out
// folder, curve, checkpoint or placement is written, and told in one line
// (not torch's stack trace).
TEST(CliTest, PlaceRefusesBadInputsBeforeWritingAnything) {
  TempDir dir;
  const std::string no_cpu = dir.Write("gpus.json", R"({"version": 1, "name": "gpus", "devices": [
      {"name": "gpu:0", "kind": "gpu", "peak_tflops": 1, "memory_bandwidth_gb_per_s": 100, "memory_bytes": 1000000000},
      {"name": "gpu:1", "kind": "gpu", "peak_tflops": 1, "memory_bandwidth_gb_per_s": 100, "memory_bytes": 1000000000}],
      "links": [{"between": ["gpu:0", "gpu:1"], "bandwidth_gb_per_s": 10}]})");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--learning-rate nan", "--learning-rate"},
      {"--learning-rate 5", "--learning-rate"},
      {"--temperature nan", "--temperature"},
      {"--temperature 1e-9", "--temperature"},
      {"--baseline-decay nan", "--baseline-decay"},
      {"--baseline-decay 2", "--baseline-decay"},
      {"--stay-bias nan", "--stay-bias"},
      {"--stay-bias 1e39", "--stay-bias"},
      {"--tanh-constant 1e300", "--tanh-constant"},
      {"--checkpoint-seconds nan", "--checkpoint-seconds"},
      {"--warm-start bogus", "bogus"},
      {"--warm-start " + dir.Write("bad.json", "{\"placement\": 3}"), "bad.json"},
      {"--resume", "no checkpoint"},
  };
  for (const auto& [flags, mention] : cases) {
    const std::string out = dir.File("run");
    ExpectCleanError(Devplace("place --method rl --graph tiny --cluster k80x2 --max-steps 2 --out " + out + " " + flags), mention);
    EXPECT_FALSE(std::filesystem::exists(out)) << flags << " left the out folder behind";
  }
  for (const char* method : {"rl --max-steps 2", "m_etf", "random", "guided"}) {
    const std::string out = dir.File("run");
    ExpectCleanError(Devplace(std::string("place --graph tiny --cluster ") + no_cpu + " --method " + method +
                              " --out " + out),
                     "has none");
    EXPECT_FALSE(std::filesystem::exists(out)) << method << " left the out folder behind";
  }
  // --out naming a file: refused, and the file left as it was.
  const std::string file = dir.Write("a-file", "mine");
  ExpectCleanError(Devplace("place --method rl --graph tiny --cluster k80x2 --max-steps 2 --out " + file), "is not a folder");
  EXPECT_EQ(ReadText(file), "mine");
}

// A flag only the learned placers read, given to a method that would ignore
// it (the default guided, mcmc, a baseline), is refused, not silently moot.
TEST(CliTest, PlaceRefusesFlagsTheMethodDoesNotRead) {
  TempDir dir;
  const std::string out = dir.File("run");
  for (const char* method : {"", "--method guided", "--method mcmc", "--method m_etf"}) {
    for (const char* flag : {"--max-steps 3", "--algorithm ppo", "--samples-per-step 4", "--warm-start best", "--hdp-groups 8"}) {
      const std::string name = std::string(flag).substr(0, std::string(flag).find(' '));
      ExpectCleanError(Devplace("place --graph tiny --cluster k80x2 " + std::string(method) + " " + flag + " --out " + out),
                       name + " applies to the learned placers");
      EXPECT_FALSE(std::filesystem::exists(out)) << method << " " << flag;
    }
  }
  ExpectCleanError(Devplace("place --graph tiny --cluster k80x2 --method mcmc --learning-rate 0.1 --out " + out), "does not learn");
}

TEST(CliTest, PlaceRefusesADamagedCheckpointInOneLine) {
  TempDir dir;
  const std::string out = dir.File("run");
  ASSERT_EQ(Devplace("place --method rl --graph tiny --cluster k80x2 --max-steps 2 --samples-per-step 2 --out " + out).exit_code, 0);
  const std::string checkpoint = out + "/checkpoint.pt";
  std::string bytes = ReadText(checkpoint);
  ASSERT_GT(bytes.size(), 10000u);
  std::fill(bytes.begin() + 5000, bytes.begin() + 9096, '\0');
  std::ofstream(checkpoint, std::ios::binary | std::ios::trunc) << bytes;
  const std::string curve = ReadText(out + "/curve.csv");
  ExpectCleanError(Devplace("place --method rl --graph tiny --cluster k80x2 --max-steps 3 --samples-per-step 2 --resume --out " + out),
                   checkpoint + ": checkpoint is damaged");
  EXPECT_EQ(ReadText(out + "/curve.csv"), curve);
}

TEST(CliTest, PlaceRunsABaselineAndRejectsUnknownMethods) {
  TempDir dir;
  Outcome o = Devplace("place --graph tiny --cluster k80x2 --method m_etf --json --out " + dir.File("etf"));
  ASSERT_EQ(o.exit_code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["method"], "m_etf");
  EXPECT_EQ(j["samples"].get<int64_t>(), 0);
  EXPECT_TRUE(std::filesystem::exists(j["placement_file"].get<std::string>()));
  ExpectCleanError(Devplace("place --graph tiny --cluster k80x2 --method alchemy"), "alchemy");
  ExpectCleanError(Devplace("place --method rl --graph tiny --cluster k80x2 --samples-per-step 0"), "samples-per-step");
  ExpectCleanError(Devplace("place --method rl --graph tiny --cluster k80x2 --group-order sideways"), "group-order");
}

TEST(CliTest, PlaceReadsTheGroupsInEitherOrder) {
  TempDir dir;
  for (const char* order : {"chain", "topological"}) {
    Outcome o = Devplace(std::string("place --method rl --graph tiny --cluster k80x2 --max-steps 2 --samples-per-step 2 --json --group-order ") +
                         order + " --stay-bias 0.5 --out " + dir.File(order));
    ASSERT_EQ(o.exit_code, 0) << order << ": " << o.out;
    nlohmann::json j = nlohmann::json::parse(o.out);
    EXPECT_EQ(j["samples"].get<int64_t>(), 4) << order;
    EXPECT_FALSE(j["oom"].get<bool>()) << order;
  }
}

// Every learned method with every algorithm runs from the command line,
// writes its placement, curve and checkpoint, and reports itself.
TEST(CliTest, PlaceRunsEveryLearnedMethodWithEitherAlgorithm) {
  TempDir dir;
  for (const char* method : {"rl", "hdp", "gdp", "mars"}) {
    for (const char* algorithm : {"reinforce", "ppo"}) {
      const std::string name = std::string(method) + "-" + algorithm;
      Outcome o = Devplace(std::string("place --graph tiny --cluster k80x2 --max-steps 2 --samples-per-step 2 --json --method ") +
                           method + " --algorithm " + algorithm + " --ppo-epochs 2 --out " + dir.File(name));
      ASSERT_EQ(o.exit_code, 0) << name << ": " << o.out;
      nlohmann::json j = nlohmann::json::parse(o.out);
      EXPECT_EQ(j["method"], method) << name;
      // HDP also measures its start probes (3 run lengths on tiny's groups
      // over two GPUs), GDP its (5 run lengths over two GPUs, one GPU, and
      // the placements of the expert, METIS, MinCut, Scotch, dp_split and
      // the three list schedulers). Mars starts as GDP does.
      const std::string m = method;
      const int64_t probes = m == "hdp" ? 3 : m == "gdp" || m == "mars" ? 14 : 0;
      EXPECT_EQ(j["samples"].get<int64_t>(), 4 + probes) << name;
      EXPECT_FALSE(j["oom"].get<bool>()) << name;
      for (const char* file : {"best_placement.json", "curve.csv", "checkpoint.pt"}) {
        EXPECT_TRUE(std::filesystem::exists(dir.File(name + "/" + file))) << name << ": " << file;
      }
      // The method's own learning rate when none is given (the curve's last column).
      const std::string curve = ReadText(dir.File(name + "/curve.csv"));
      const std::string last_row = curve.substr(curve.rfind('\n', curve.size() - 2) + 1);
      EXPECT_EQ(std::stod(last_row.substr(last_row.rfind(',') + 1)), m == "mars" ? 0.003 : 0.0003) << name << ": " << last_row;
    }
  }
}

// `train` writes a policy file and a checkpoint; the policy places a graph
// zero-shot the same way in every process (same seed), fine-tunes with a
// budget, and is refused in one line on a cluster of another device count
// or when damaged; training resumes from its checkpoint.
TEST(CliTest, TrainWritesAPolicyThatPlacesZeroShotAlikeInEveryProcess) {
  TempDir dir;
  const std::string policy = dir.File("policy.pt");
  // What a killed training leaves behind is removed by the next one.
  std::ofstream(policy + ".tmp.999999") << "half";
  std::ofstream(policy + ".checkpoint.tmp.999999") << "half";
  Outcome t = Devplace("train --graphs tiny,synthetic --cluster k80x2 -o " + policy +
                       " --max-steps 3 --samples-per-step 2 --gdp-hidden 16 --gdp-heads 2 --quiet");
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_NE(t.out.find("trained 3 updates"), std::string::npos) << t.out;
  ASSERT_TRUE(std::filesystem::exists(policy));
  ASSERT_TRUE(std::filesystem::exists(policy + ".checkpoint"));
  EXPECT_FALSE(std::filesystem::exists(policy + ".tmp.999999"));
  EXPECT_FALSE(std::filesystem::exists(policy + ".checkpoint.tmp.999999"));

  std::string placements[2];
  for (int run = 0; run < 2; ++run) {
    const std::string out = dir.File("zero" + std::to_string(run));
    Outcome o = Devplace("place --method gdp --graph inception_v3 --cluster k80x2 --policy " + policy + " --json --out " + out);
    ASSERT_EQ(o.exit_code, 0) << o.out;
    nlohmann::json j = nlohmann::json::parse(o.out);
    EXPECT_TRUE(j["zero_shot"].get<bool>());
    EXPECT_EQ(j["samples"].get<int64_t>(), 14 + 16);  // start probes, the most likely placement and 15 samples
    EXPECT_FALSE(j["oom"].get<bool>());
    placements[run] = ReadText(out + "/best_placement.json");
  }
  EXPECT_FALSE(placements[0].empty());
  EXPECT_EQ(placements[0], placements[1]);

  Outcome tuned = Devplace("place --method gdp --graph tiny --cluster k80x2 --policy " + policy +
                           " --max-steps 2 --samples-per-step 2 --json --out " + dir.File("tuned"));
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out;
  nlohmann::json j = nlohmann::json::parse(tuned.out);
  EXPECT_FALSE(j["zero_shot"].get<bool>());
  EXPECT_EQ(j["samples"].get<int64_t>(), 14 + 4);

  ExpectCleanError(Devplace("place --method gdp --graph tiny --cluster k80x4 --policy " + policy + " --out " + dir.File("x4")),
                   "trained for 3 devices");
  ExpectCleanError(Devplace("place --method hdp --graph tiny --cluster k80x2 --policy " + policy + " --out " + dir.File("hdp")),
                   "--policy is a policy trained by");
  EXPECT_FALSE(std::filesystem::exists(dir.File("x4")));

  Outcome resumed = Devplace("train --graphs tiny,synthetic --cluster k80x2 -o " + policy +
                             " --max-steps 5 --samples-per-step 2 --gdp-hidden 16 --gdp-heads 2 --quiet --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("trained 5 updates"), std::string::npos) << resumed.out;
  ExpectCleanError(Devplace("train --graphs synthetic,tiny --cluster k80x2 -o " + policy +
                            " --max-steps 6 --gdp-hidden 16 --gdp-heads 2 --quiet --resume"),
                   "resume with the same --graphs");

  std::string bytes = ReadText(policy);
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(policy, std::ios::binary | std::ios::trunc) << bytes;
  ExpectCleanError(Devplace("place --method gdp --graph tiny --cluster k80x2 --policy " + policy + " --out " + dir.File("bad")),
                   "GDP policy file is damaged");
}

// `train --imitate-search N` (distilling search) trains end to end, says
// so in its policy file, and gives the same policy resumed as run straight
// (the targets are found again, alike); bad values are one-line errors.
TEST(CliTest, TrainImitatingSearchRecordsItAndResumesAlike) {
  TempDir dir;
  const std::string flags = " --cluster k80x2,p100x4 --gdp-head devices --start-bias 0 --imitate-search 40 --imitation-weighting flops --samples-per-step 2"
                            " --gdp-hidden 16 --gdp-heads 2 --quiet --checkpoint-seconds 0";
  Outcome straight = Devplace("train --graphs tiny,synthetic -o " + dir.File("straight.pt") + " --max-steps 4" + flags);
  ASSERT_EQ(straight.exit_code, 0) << straight.out;
  EXPECT_NE(straight.out.find("trained 4 updates"), std::string::npos) << straight.out;
  EXPECT_NE(ReadText(dir.File("straight.pt")).find("\"imitated_search_evaluations\":40"), std::string::npos);
  EXPECT_NE(ReadText(dir.File("straight.pt")).find("\"imitation_weighting\":\"flops\""), std::string::npos);

  ASSERT_EQ(Devplace("train --graphs tiny,synthetic -o " + dir.File("resumed.pt") + " --max-steps 2" + flags).exit_code, 0);
  Outcome resumed = Devplace("train --graphs tiny,synthetic -o " + dir.File("resumed.pt") + " --max-steps 4 --resume" + flags);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_EQ(ReadText(dir.File("resumed.pt")), ReadText(dir.File("straight.pt")));

  ExpectCleanError(Devplace("train --graphs tiny --cluster k80x2 -o " + dir.File("bad.pt") + " --imitate-search -5"), "--imitate-search");
  ExpectCleanError(Devplace("train --graphs tiny --cluster k80x2 -o " + dir.File("bad.pt") + " --imitate-search 10 --imitation-weight 0"),
                   "--imitation-weight");
  ExpectCleanError(Devplace("train --graphs tiny --cluster k80x2 -o " + dir.File("bad.pt") + " --imitate-search 10 --imitation-weighting loud"),
                   "--imitation-weighting");
  ExpectCleanError(Devplace("train --method mars --graphs tiny --cluster k80x2 -o " + dir.File("bad.pt") +
                            " --imitate-search 10 --imitation-weighting flops"),
                   "--method gdp only");
  EXPECT_FALSE(std::filesystem::exists(dir.File("bad.pt")));
}

// `pretrain` writes an encoder file and its checkpoint, resumes from it, and
// refuses bad input in one line before writing anything.
TEST(CliTest, PretrainWritesAnEncoderAndResumes) {
  TempDir dir;
  const std::string encoder = dir.File("encoder.pt");
  std::ofstream(encoder + ".tmp.999999") << "half";
  Outcome p = Devplace("pretrain --method mars --graphs tiny,rnnlm -o " + encoder + " --max-steps 4 --mars-hidden 8");
  ASSERT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("pre-trained 4 steps"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("best DGI loss"), std::string::npos) << p.out;
  EXPECT_TRUE(std::filesystem::exists(encoder));
  EXPECT_TRUE(std::filesystem::exists(encoder + ".checkpoint"));
  EXPECT_FALSE(std::filesystem::exists(encoder + ".tmp.999999"));
  Outcome resumed = Devplace("pretrain --graphs tiny,rnnlm -o " + encoder + " --max-steps 6 --mars-hidden 8 --resume --quiet");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("pre-trained 6 steps"), std::string::npos) << resumed.out;

  // Mars places with it, fine-tuned or frozen; other methods refuse it.
  for (const char* rate : {"0.0003", "0"}) {
    Outcome placed = Devplace("place --method mars --graph synthetic --cluster k80x2 --encoder " + encoder +
                              " --max-steps 2 --samples-per-step 2 --json --mars-encoder-learning-rate " + rate + " --out " +
                              dir.File(std::string("mars") + rate));
    ASSERT_EQ(placed.exit_code, 0) << placed.out;
    EXPECT_EQ(nlohmann::json::parse(placed.out)["method"], "mars");
  }
  ExpectCleanError(Devplace("place --method hdp --graph tiny --cluster k80x2 --encoder " + encoder + " --out " + dir.File("gdp")),
                   "--encoder is a Mars encoder");
  ExpectCleanError(Devplace("place --method mars --graph tiny --cluster k80x2 --encoder " + encoder + ".checkpoint --out " + dir.File("ck")),
                   "not a devplace Mars encoder file");
  EXPECT_FALSE(std::filesystem::exists(dir.File("gdp")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("ck")));

  ExpectCleanError(Devplace("pretrain --graphs rnnlm,tiny -o " + encoder + " --max-steps 8 --mars-hidden 8 --resume"),
                   "resume with the same --graphs");
  ExpectCleanError(Devplace("pretrain --method gdp --graphs tiny -o " + dir.File("g.pt")), "--method must be mars");
  ExpectCleanError(Devplace("pretrain --graphs tiny -o " + dir.File("r.pt") + " --resume"), "no pretraining checkpoint");
  ExpectCleanError(Devplace("pretrain --graphs tiny,nonesuch -o " + dir.File("n.pt")), "nonesuch");
  ExpectCleanError(Devplace("pretrain --graphs tiny -o " + dir.File("")), "is a folder");
  ExpectCleanError(Devplace("pretrain --graphs tiny -o " + dir.File("h.pt") + " --mars-hidden 0"), "--mars-hidden");
  ExpectCleanError(Devplace("pretrain --graphs tiny -o " + dir.File("l.pt") + " --learning-rate nan"), "--learning-rate");
  for (const char* name : {"g.pt", "r.pt", "n.pt", "h.pt", "l.pt"}) EXPECT_FALSE(std::filesystem::exists(dir.File(name))) << name;
}

// `train --method mars` writes a Mars policy (from a pre-trained encoder
// or a fresh one) that places an unseen graph zero-shot alike in every
// process, resumes, and is refused in one line where it does not fit.
TEST(CliTest, TrainMarsWritesAPolicyThatPlacesUnseenGraphs) {
  TempDir dir;
  const std::string encoder = dir.File("encoder.pt"), policy = dir.File("mars.pt");
  ASSERT_EQ(Devplace("pretrain --graphs tiny,synthetic -o " + encoder + " --max-steps 3 --mars-hidden 8 --quiet").exit_code, 0);
  Outcome t = Devplace("train --method mars --graphs tiny,synthetic --cluster k80x2 -o " + policy + " --encoder " + encoder +
                       " --max-steps 2 --samples-per-step 2 --mars-hidden 8 --quiet");
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_NE(t.out.find("trained 2 updates"), std::string::npos) << t.out;
  std::string placements[2];
  for (int run = 0; run < 2; ++run) {
    const std::string out = dir.File("zero" + std::to_string(run));
    Outcome o = Devplace("place --method mars --graph rnnlm --cluster k80x2 --policy " + policy + " --json --out " + out);
    ASSERT_EQ(o.exit_code, 0) << o.out;
    nlohmann::json j = nlohmann::json::parse(o.out);
    EXPECT_TRUE(j["zero_shot"].get<bool>());
    EXPECT_EQ(j["samples"].get<int64_t>(), 14 + 16);
    placements[run] = ReadText(out + "/best_placement.json");
  }
  EXPECT_FALSE(placements[0].empty());
  EXPECT_EQ(placements[0], placements[1]);
  Outcome resumed = Devplace("train --method mars --graphs tiny,synthetic --cluster k80x2 -o " + policy + " --encoder " + encoder +
                             " --max-steps 3 --samples-per-step 2 --mars-hidden 8 --quiet --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("trained 3 updates"), std::string::npos) << resumed.out;

  ExpectCleanError(Devplace("train --method gdp --graphs tiny,synthetic --cluster k80x2 -o " + policy + " --max-steps 4 --resume"),
                   "not a checkpoint of `devplace train --method gdp`");
  ExpectCleanError(Devplace("place --method mars --graph tiny --cluster k80x4 --policy " + policy + " --out " + dir.File("x4")),
                   "the Mars policy was trained for 3 devices");
  ExpectCleanError(Devplace("place --method gdp --graph tiny --cluster k80x2 --policy " + policy + " --out " + dir.File("g")),
                   "not a devplace GDP policy file");
  ExpectCleanError(Devplace("place --method mars --graph tiny --cluster k80x2 --policy " + policy + " --encoder " + encoder +
                            " --out " + dir.File("both")),
                   "holds its encoder already");
  ExpectCleanError(Devplace("train --method hdp --graphs tiny --cluster k80x2 -o " + dir.File("h.pt")), "gdp or mars");
  for (const char* name : {"x4", "g", "both", "h.pt"}) EXPECT_FALSE(std::filesystem::exists(dir.File(name))) << name;
}

TEST(CliTest, ClustersAndModelsAreListed) {
  Outcome clusters = Devplace("clusters");
  ASSERT_EQ(clusters.exit_code, 0);
  for (const char* name : {"k80x2", "k80x4", "p100x2", "p100x4", "p100x8", "h100x8"}) {
    EXPECT_NE(clusters.out.find(name), std::string::npos) << name;
  }
  Outcome show = Devplace("clusters --show k80x2");
  ASSERT_EQ(show.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(show.out)["devices"].size(), 3u);
  Outcome models = Devplace("models");
  ASSERT_EQ(models.exit_code, 0);
  EXPECT_NE(models.out.find("tiny"), std::string::npos);
}

// devplace links no torch, which costs a run 0.4 s and 160 MiB to load: the
// commands that do not learn must not load it, and the learned ones must
// still reach it, through devplace-learn. LD_DEBUG=libs makes the dynamic
// loader name every library it loads, one opened by dlopen too.
Outcome DevplaceWithLoaderLog(const std::string& args) {
  return testing::RunCommand(std::string("LD_DEBUG=libs ") + DEVPLACE_BINARY + " " + args);
}

bool LoadedTorch(const Outcome& o) {
  return o.out.find("libtorch") != std::string::npos || o.out.find("libc10") != std::string::npos;
}

std::string Tail(const std::string& text) { return text.size() > 2000 ? text.substr(text.size() - 2000) : text; }

TEST(CliTest, CommandsThatDoNotLearnLoadNoTorch) {
  TempDir dir;
  const std::string placement = dir.File("placement.json");
  const std::string onnx = std::string(DEVPLACE_TEST_DATA) + "/small_cnn.onnx";
  const std::vector<std::string> commands = {
      "--help",
      "models",
      "clusters",
      "clusters --show k80x2",
      "info --graph tiny",
      "simulate --graph tiny --cluster k80x4 --placement single:gpu:0",
      "compare --graph tiny --cluster k80x2 --methods single_gpu,m_etf,mcmc --max-evaluations 50",
      "generate tiny -o " + dir.File("tiny.json"),
      "generate cluster --seed 3 -o " + dir.File("cluster.json"),
      "export --graph tiny --cluster k80x2 --method m_etf -o " + placement,
      "simulate --graph tiny --cluster k80x2 --placement " + placement,
      "import " + onnx + " -o " + dir.File("cnn.json"),
      "report --graph tiny --cluster k80x2 --methods expert,m_etf -o " + dir.File("report.html"),
  };
  for (const std::string& args : commands) {
    Outcome o = DevplaceWithLoaderLog(args);
    EXPECT_EQ(o.exit_code, 0) << args << "\n" << Tail(o.out);
    EXPECT_NE(o.out.find("find library="), std::string::npos) << "LD_DEBUG said nothing: the check would pass blind";
    EXPECT_FALSE(LoadedTorch(o)) << args << " loaded torch";
  }
  // A refusal, such as a learned flag given to a command that does not
  // learn, is answered without torch as well.
  Outcome refused = DevplaceWithLoaderLog("simulate --graph tiny --cluster k80x2 --placement single:gpu:0 --max-steps 3");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_FALSE(LoadedTorch(refused));
}

TEST(CliTest, LearnedCommandsAnswerThroughDevplaceLearn) {
  // Each one's own --help, with its own flags: devplace hands the command
  // line over unparsed.
  const std::vector<std::pair<std::string, std::string>> helps = {
      {"place", "--max-steps"}, {"train", "--graphs"}, {"pretrain", "--graphs"}, {"run", "--steps"}, {"profile", "--steps"}};
  for (const auto& [command, flag] : helps) {
    Outcome o = DevplaceWithLoaderLog(command + " --help");
    EXPECT_EQ(o.exit_code, 0) << command << "\n" << Tail(o.out);
    EXPECT_TRUE(LoadedTorch(o)) << command << " did not run in devplace-learn";
    EXPECT_NE(o.out.find(flag), std::string::npos) << command;
  }
  // devplace-learn's errors are devplace's: one line, named as devplace.
  ExpectCleanError(Devplace("place --graph tiny"), "--cluster");
  ExpectCleanError(Devplace("clusters --detect --show k80x2"), "do not go together");
  ExpectCleanError(Devplace("clusters --cpu-devices 2"), "needs --detect");
}

// Without devplace-learn next to it, devplace still does all that needs no
// torch, and a learned command is refused in one line naming what is missing.
TEST(CliTest, DevplaceWithoutDevplaceLearnNamesIt) {
  TempDir dir;
  const std::string alone = dir.File("devplace");
  std::filesystem::copy_file(DEVPLACE_BINARY, alone);
  Outcome help = testing::RunCommand(alone + " --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* command : {"place", "train", "pretrain", "run", "profile", "simulate"}) {
    EXPECT_NE(help.out.find(command), std::string::npos) << command;
  }
  EXPECT_EQ(testing::RunCommand(alone + " simulate --graph tiny --cluster k80x2 --placement single:gpu:0").exit_code, 0);
  for (const char* args : {"place --graph tiny --cluster k80x2 --method m_etf", "train --help", "clusters --detect"}) {
    Outcome o = testing::RunCommand(alone + " " + args + " --out " + dir.File("run"));
    ExpectCleanError(o, "devplace-learn");
    EXPECT_NE(o.out.find(dir.File("devplace-learn")), std::string::npos) << o.out;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("run")));
}

}  // namespace
}  // namespace devplace
