// `devplace place --method guided` (and `place` without --method, whose
// default it is) end to end: what it says it ran, its budget, its
// checkpoint and --resume, and the checkpoints it refuses.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_devplace.h"
#include "test_files.h"

namespace devplace {
namespace {

using testing::ExpectCleanError;
using testing::Outcome;
using testing::RunDevplace;
using testing::TempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A graph of 400 ops in branches: enough units that 700 moves are far from
// exhausting what a chain can improve, small enough to take a second.
class GuidedCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = dir_.File("graph.json");
    Outcome g = RunDevplace("generate synthetic --ops 400 --width 4 -o " + graph_);
    ASSERT_EQ(g.exit_code, 0) << g.out;
  }
  Outcome Place(const std::string& flags) {
    return RunDevplace("place --graph " + graph_ + " --cluster k80x4 " + flags);
  }
  static nlohmann::json Json(const Outcome& o) { return nlohmann::json::parse(o.out); }
  TempDir dir_;
  std::string graph_;
};

TEST_F(GuidedCliTest, PlaceWithoutMethodRunsGuidedAndSaysSo) {
  Outcome text = Place("--max-samples 200 --out " + dir_.File("text"));
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("no --method given: guided"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("guided: step time"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("samples/s"), std::string::npos) << text.out;

  Outcome json = Place("--max-samples 200 --json --out " + dir_.File("json"));
  ASSERT_EQ(json.exit_code, 0) << json.out;
  const nlohmann::json j = Json(json);
  EXPECT_EQ(j["method"], "guided");
  EXPECT_TRUE(j["method_by_default"].get<bool>());
  EXPECT_FALSE(j["step_time_s"].is_null()) << j.dump();
  EXPECT_GT(j["samples"].get<int64_t>(), 100);
  EXPECT_LE(j["samples"].get<int64_t>(), 201);
  EXPECT_GT(j["samples_per_second"].get<double>(), 0);
  EXPECT_TRUE(std::filesystem::exists(dir_.File("json/best_placement.json")));
  EXPECT_TRUE(std::filesystem::exists(dir_.File("json/checkpoint.pt")));
  EXPECT_TRUE(std::filesystem::exists(dir_.File("json/curve.csv")));

  // Named, it is not the default.
  Outcome named = Place("--method guided --max-samples 50 --json --out " + dir_.File("named"));
  ASSERT_EQ(named.exit_code, 0) << named.out;
  EXPECT_FALSE(Json(named)["method_by_default"].get<bool>());
}

// A run continued with --resume and a larger budget is the run that had
// the larger budget from the start: the same best placement, found after
// the same evaluations.
TEST_F(GuidedCliTest, AResumedRunEndsWhereAnUninterruptedOneDoes) {
  // Both ways the scorer learns: their states (a replay buffer and move
  // history; a policy and the moves since its update) are all checkpointed.
  for (const std::string learning : {"regression", "reinforce"}) {
    const std::string a = dir_.File("a-" + learning), b = dir_.File("b-" + learning);
    const std::string flags = "--method guided --guided-learning " + learning + " --seed 5 --json ";
    Outcome first = Place(flags + "--max-samples 300 --out " + a);
    ASSERT_EQ(first.exit_code, 0) << first.out;
    Outcome resumed = Place(flags + "--max-samples 700 --resume --out " + a);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
    Outcome whole = Place(flags + "--max-samples 700 --out " + b);
    ASSERT_EQ(whole.exit_code, 0) << whole.out;
    const nlohmann::json r = Json(resumed), w = Json(whole);
    EXPECT_EQ(r["samples"], w["samples"]) << learning;
    EXPECT_EQ(r["step_time_s"], w["step_time_s"]) << learning;
    const nlohmann::json placement_r = nlohmann::json::parse(ReadAll(a + "/best_placement.json"));
    const nlohmann::json placement_w = nlohmann::json::parse(ReadAll(b + "/best_placement.json"));
    EXPECT_EQ(placement_r["placement"], placement_w["placement"]) << learning;
    // The curve goes on where it stopped: one header.
    const std::string curve = ReadAll(a + "/curve.csv");
    EXPECT_EQ(curve.find("step,"), 0u);
    EXPECT_EQ(curve.find("step,", 1), std::string::npos);
  }
}

TEST_F(GuidedCliTest, ResumeRefusesACheckpointItCannotContinue) {
  // None there.
  ExpectCleanError(Place("--method guided --resume --max-samples 100 --out " + dir_.File("none")), "no checkpoint");

  Outcome first = Place("--method guided --seed 5 --max-samples 100 --json --out " + dir_.File("a"));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  // Another seed is another run.
  ExpectCleanError(Place("--method guided --seed 6 --resume --max-samples 200 --out " + dir_.File("a")), "seed");
  // Other guided sizes.
  ExpectCleanError(Place("--method guided --seed 5 --guided-hidden 8 --resume --max-samples 200 --out " + dir_.File("a")),
                   "hidden");

  // Damaged: one byte changed in the middle.
  std::string bytes = ReadAll(dir_.File("a/checkpoint.pt"));
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(dir_.File("a/checkpoint.pt"), std::ios::binary) << bytes;
  ExpectCleanError(Place("--method guided --seed 5 --resume --max-samples 200 --out " + dir_.File("a")), "damaged");

  // A learned placer's checkpoint is not a guided search's.
  std::filesystem::create_directories(dir_.File("rl"));
  std::ofstream(dir_.File("rl/checkpoint.pt"), std::ios::binary) << "DEVPLACE-CHECKPOINT 2\nwhatever";
  ExpectCleanError(Place("--method guided --resume --max-samples 100 --out " + dir_.File("rl")), "learned placer's checkpoint");
}

// A screen one search wrote starts another (on another graph and cluster):
// the same placement in every run, and not the fresh screen's; a screen
// that does not load, or of another size, is one line before any file.
TEST_F(GuidedCliTest, AScreenWrittenByOneSearchStartsAnother) {
  const std::string screen = dir_.File("screen.pt");
  Outcome written = RunDevplace("place --graph tiny --cluster p100x2 --method guided --seed 3 --max-samples 300 "
                                "--guided-screen none --guided-screen-out " + screen + " --json --out " + dir_.File("w"));
  ASSERT_EQ(written.exit_code, 0) << written.out;
  ASSERT_TRUE(std::filesystem::is_regular_file(screen));
  int runs = 0;
  auto placed = [&](const std::string& flags) {
    const std::string out = dir_.File("run" + std::to_string(++runs));
    Outcome o = Place("--method guided --seed 5 --max-samples 300 --json --out " + out + " " + flags);
    EXPECT_EQ(o.exit_code, 0) << o.out;
    if (o.exit_code != 0) return nlohmann::json();
    return nlohmann::json::parse(ReadAll(out + "/best_placement.json"))["placement"];
  };
  const nlohmann::json from_screen = placed("--guided-screen " + screen);
  EXPECT_EQ(placed("--guided-screen " + screen), from_screen);
  EXPECT_EQ(placed("--guided-screen " + screen + " --guided-screen-rows 100"),
            placed("--guided-screen " + screen + " --guided-screen-rows 100"));
  EXPECT_NE(placed("--guided-screen none"), from_screen);

  ExpectCleanError(Place("--method guided --max-samples 100 --guided-screen " + dir_.File("missing.pt") + " --out " + dir_.File("m")),
                   "missing.pt");
  EXPECT_FALSE(std::filesystem::exists(dir_.File("m")));
  std::string bytes = ReadAll(screen);
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(dir_.File("damaged.pt"), std::ios::binary) << bytes;
  ExpectCleanError(Place("--method guided --max-samples 100 --guided-screen " + dir_.File("damaged.pt") + " --out " + dir_.File("d")),
                   "damaged.pt");
  EXPECT_FALSE(std::filesystem::exists(dir_.File("d")));
  ExpectCleanError(Place("--method guided --max-samples 100 --guided-hidden 8 --guided-screen " + screen), "screen");
  ExpectCleanError(Place("--method guided --max-samples 100 --guided-learning reinforce --guided-screen " + screen),
                   "reinforce");
  ExpectCleanError(Place("--method guided --max-samples 100 --guided-screen-out " + dir_.File("no/such/folder/s.pt")),
                   "no/such/folder");
}

TEST_F(GuidedCliTest, PolicyUpdateBudgetsAreRefused) {
  ExpectCleanError(Place("--method guided --max-steps 10 --out " + dir_.File("s")), "--max-steps");
  EXPECT_FALSE(std::filesystem::exists(dir_.File("s")));
}

}  // namespace
}  // namespace devplace
