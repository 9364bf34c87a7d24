// `devplace place` killed with SIGKILL at chosen moments, then resumed: the
// best placement's step time never gets worse than it was before the kill,
// and the curve ends with one whole row per step, none torn, missing or
// repeated.
//
// The moments are named points in the trainer (src/learned/training/place_trainer.cc):
// with DEVPLACE_TEST_HOLD_AT=POINT:N the run stops at the N-th arrival at
// POINT, creates DEVPLACE_TEST_HOLD_MARKER and waits; the test polls for the
// marker (a bounded loop, no sleeps as synchronisation) and kills it there.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_devplace.h"
#include "test_files.h"

namespace {

namespace fs = std::filesystem;
using devplace::testing::Outcome;
using devplace::testing::ReadFile;
using devplace::testing::RunDevplace;
using devplace::testing::Split;
using devplace::testing::TempDir;

constexpr int kSteps = 12;
// Checkpoints at step 1 (the first placement that runs), every 3 steps and
// at the end; never by wall time, so that every run checkpoints alike.
const std::string kBaseArgs =
    "place --method rl --graph tiny --cluster k80x2 --samples-per-step 4 --workers 1 --seed 3 --checkpoint-seconds 0";
const std::string kRunArgs = kBaseArgs + " --checkpoint-every 3 --max-steps " + std::to_string(kSteps);

// The step time of the best placement in `out`, or 0 if there is none yet.
double BestStepTimeS(const std::string& out) {
  const std::string file = out + "/best_placement.json";
  if (!fs::exists(file)) return 0;
  Outcome o = RunDevplace("simulate --graph tiny --cluster k80x2 --json --placement " + file);
  EXPECT_EQ(o.exit_code, 0) << o.out;
  return nlohmann::json::parse(o.out)["step_time_s"].get<double>();
}

// The curve's rows without the wall-clock column and, with `without_best`,
// without the best-so-far column: what must match an uninterrupted run.
std::vector<std::string> Rows(const std::string& curve, bool without_best) {
  std::vector<std::string> rows;
  for (const std::string& line : Split(curve, '\n')) {
    std::vector<std::string> fields = Split(line, ',');
    std::string row;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i == 1 || (without_best && i == 4)) continue;
      row += fields[i] + ",";
    }
    rows.push_back(row);
  }
  return rows;
}

// The curve must be the header and rows 1..kSteps, whole and in order.
void ExpectWholeCurve(const std::string& out) {
  const std::string curve = ReadFile(out + "/curve.csv");
  ASSERT_FALSE(curve.empty());
  EXPECT_EQ(curve.back(), '\n') << "last row torn";
  std::vector<std::string> lines = Split(curve, '\n');
  ASSERT_EQ(lines.size(), static_cast<size_t>(kSteps + 1)) << curve;
  EXPECT_EQ(lines[0].rfind("step,seconds,samples,", 0), 0u);
  for (int step = 1; step <= kSteps; ++step) {
    std::vector<std::string> fields = Split(lines[step], ',');
    ASSERT_EQ(fields.size(), 8u) << lines[step];
    EXPECT_EQ(fields[0], std::to_string(step)) << curve;
    EXPECT_EQ(fields[2], std::to_string(4 * step)) << curve;  // samples
  }
}

void ExpectNoTemporaryFiles(const std::string& out) {
  for (const auto& entry : fs::directory_iterator(out)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << entry.path();
  }
}

// Starts `devplace ARGS` with the hold armed at `hold_at`, waits for it to
// reach the hold, and kills it there with SIGKILL.
void RunAndKillAt(const std::string& args, const std::string& hold_at, const TempDir& dir) {
  const std::string marker = dir.File("held");
  fs::remove(marker);
  const std::string log = dir.File("log.txt");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("DEVPLACE_TEST_HOLD_AT", hold_at.c_str(), 1);
    ::setenv("DEVPLACE_TEST_HOLD_MARKER", marker.c_str(), 1);
    const std::string command = std::string(DEVPLACE_BINARY) + " " + args + " > " + log + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Poll for the marker; if the run ends first, the hold was never reached.
  bool held = false;
  int status = 0;
  bool exited = false;
  const timespec pause{0, 2'000'000};  // 2 ms between looks; bounded to about 5 minutes in all
  for (int look = 0; look < 150'000 && !held && !exited; ++look) {
    held = fs::exists(marker);
    if (!held) {
      exited = ::waitpid(pid, &status, WNOHANG) == pid;
      ::nanosleep(&pause, nullptr);
    }
  }
  if (!exited) {
    ::kill(pid, SIGKILL);
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  }
  ASSERT_TRUE(held) << "the run never reached " << hold_at << ": " << ReadFile(log);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << ReadFile(log);
}

// Resumes the run in `out` to the end and checks what it left.
void ResumeAndCheck(const std::string& out, double best_before_kill_s) {
  Outcome o = RunDevplace(kRunArgs + " --json --resume --out " + out);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const double best_after_s = BestStepTimeS(out);
  ASSERT_GT(best_after_s, 0);
  if (best_before_kill_s > 0) EXPECT_LE(best_after_s, best_before_kill_s);
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(o.out)["step_time_s"].get<double>(), best_after_s);
  ExpectWholeCurve(out);
  ExpectNoTemporaryFiles(out);
}

class SigkillTest : public ::testing::Test {
 protected:
  // The same run, never killed: with one controller a resumed run must
  // continue exactly as it would have.
  static void SetUpTestSuite() {
    reference_ = new TempDir;
    Outcome o = RunDevplace(kRunArgs + " --out " + reference_->File("run"));
    ASSERT_EQ(o.exit_code, 0) << o.out;
  }
  static void TearDownTestSuite() {
    delete reference_;
    reference_ = nullptr;
  }
  static std::string ReferenceOut() { return reference_->File("run"); }

  // Kills a run at `hold_at`, checks what the kill left with `check_killed`,
  // resumes it, and compares it with the uninterrupted run.
  void KillResumeAndCompare(const std::string& hold_at, const std::function<void(const std::string&)>& check_killed) {
    TempDir dir;
    const std::string out = dir.File("run");
    ASSERT_NO_FATAL_FAILURE(RunAndKillAt(kRunArgs + " --out " + out, hold_at, dir));
    const double best_before_s = BestStepTimeS(out);
    check_killed(out);
    ASSERT_NO_FATAL_FAILURE(ResumeAndCheck(out, best_before_s));
    const std::string reference_curve = ReadFile(ReferenceOut() + "/curve.csv");
    EXPECT_EQ(Rows(ReadFile(out + "/curve.csv"), /*without_best=*/true), Rows(reference_curve, true));
    EXPECT_DOUBLE_EQ(BestStepTimeS(out), BestStepTimeS(ReferenceOut()));
  }

  static TempDir* reference_;
};

TempDir* SigkillTest::reference_ = nullptr;

TEST_F(SigkillTest, KilledWhileWritingACheckpoint) {
  // The second checkpoint (step 3) is half written: the first (step 1) stays.
  KillResumeAndCompare("checkpoint-write:2", [](const std::string& out) {
    bool half_written = false;
    for (const auto& entry : fs::directory_iterator(out)) {
      half_written |= entry.path().filename().string().rfind("checkpoint.pt.tmp.", 0) == 0;
    }
    EXPECT_TRUE(half_written) << "the kill did not come during the write";
    EXPECT_TRUE(fs::exists(out + "/checkpoint.pt"));
  });
}

TEST_F(SigkillTest, KilledBetweenWritingACheckpointAndRenamingIt) {
  KillResumeAndCompare("checkpoint-rename:3", [](const std::string& out) { EXPECT_TRUE(fs::exists(out + "/checkpoint.pt")); });
}

TEST_F(SigkillTest, KilledWhileWritingACurveRow) {
  KillResumeAndCompare("curve-row:5", [](const std::string& out) {
    const std::string curve = ReadFile(out + "/curve.csv");
    ASSERT_FALSE(curve.empty());
    EXPECT_NE(curve.back(), '\n') << "the kill did not tear a row";
  });
}

TEST_F(SigkillTest, KilledBetweenSteps) {
  KillResumeAndCompare("step-end:7", [](const std::string& out) {
    EXPECT_EQ(Split(ReadFile(out + "/curve.csv"), '\n').size(), 8u);  // header and 7 rows
  });
}

TEST_F(SigkillTest, KilledAfterBetterPlacementsThanTheCheckpointsWereWritten) {
  // Checkpoints only at the first placement that runs (step 1) and at the
  // end: killed after step 6, the file holds a placement found after the
  // checkpoint, faster than any step 2 finds.
  TempDir dir;
  const std::string out = dir.File("run");
  const std::string sparse = kBaseArgs + " --checkpoint-every 100";
  ASSERT_NO_FATAL_FAILURE(RunAndKillAt(sparse + " --max-steps 12 --out " + out, "step-end:6", dir));
  const double best_before_s = BestStepTimeS(out);
  ASSERT_GT(best_before_s, 0);
  // Step 2 again: its samples beat the checkpoint's best but not the
  // file's, which must survive them.
  Outcome one_step = RunDevplace(sparse + " --resume --max-steps 2 --out " + out);
  ASSERT_EQ(one_step.exit_code, 0) << one_step.out;
  EXPECT_LE(BestStepTimeS(out), best_before_s);
  ASSERT_NO_FATAL_FAILURE(ResumeAndCheck(out, best_before_s));
  EXPECT_DOUBLE_EQ(BestStepTimeS(out), BestStepTimeS(ReferenceOut()));
}

TEST_F(SigkillTest, KilledAgainWhileResuming) {
  TempDir dir;
  const std::string out = dir.File("run");
  ASSERT_NO_FATAL_FAILURE(RunAndKillAt(kRunArgs + " --out " + out, "checkpoint-write:2", dir));
  const double best_first_kill_s = BestStepTimeS(out);
  ASSERT_NO_FATAL_FAILURE(RunAndKillAt(kRunArgs + " --resume --out " + out, "curve-row:4", dir));
  const double best_second_kill_s = BestStepTimeS(out);
  if (best_first_kill_s > 0) EXPECT_LE(best_second_kill_s, best_first_kill_s);
  ASSERT_NO_FATAL_FAILURE(ResumeAndCheck(out, best_second_kill_s));
  EXPECT_EQ(Rows(ReadFile(out + "/curve.csv"), true), Rows(ReadFile(ReferenceOut() + "/curve.csv"), true));
}

}  // namespace
