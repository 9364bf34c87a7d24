// A long search stopped by Ctrl-C (SIGINT) or SIGTERM keeps what it found:
// the command ends its search as if the budget ran out, writes its results,
// says it stopped early, and exits with 128 + the signal. The program runs
// as a child; the test sends the signal once the search has printed its
// first progress line (read from the child's output, no sleeps), so the
// signal always lands mid-search.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_files.h"

namespace {

namespace fs = std::filesystem;
using devplace::testing::ReadFile;
using devplace::testing::TempDir;

struct Interrupted {
  int exit_code = -1;  // -1 if it did not exit normally (killed by the signal)
  std::string out;     // stdout and stderr together
};

// Runs devplace with `args`, sends `signal` (none if 0) once a line of its output
// contains `wait_for`, and reads the rest of its output to the end.
// `stop_at` sets DEVPLACE_TEST_STOP_AT (util/stop_request.h): the program
// waits at that point for the signal, so that it lands in the middle of a
// step, a batch or a scan, whatever the machine's speed.
Interrupted RunAndSignal(const std::vector<std::string>& args, const std::string& wait_for, int signal,
                         const std::string& stop_at = "") {
  Interrupted result;
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return result;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    // The test runner may run with SIGINT ignored; the program honours an
    // ignored SIGINT, so start it as a terminal would.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    if (!stop_at.empty()) setenv("DEVPLACE_TEST_STOP_AT", stop_at.c_str(), 1);
    std::vector<char*> argv;
    static std::string binary = DEVPLACE_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copies = args;
    for (std::string& a : copies) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  FILE* output = fdopen(pipe_fds[0], "r");
  bool sent = false;
  char line[4096];
  while (std::fgets(line, sizeof line, output)) {
    result.out += line;
    if (!sent && result.out.find(wait_for) != std::string::npos) {
      if (signal != 0) kill(pid, signal);
      sent = true;
    }
  }
  std::fclose(output);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  EXPECT_TRUE(sent) << "never saw '" << wait_for << "': " << result.out;
  return result;
}

// The budget is far beyond what the test waits: only the signal ends it.
TEST(StopSignalTest, McmcStoppedByCtrlCWritesItsBestPlacement) {
  TempDir dir;
  const std::string out = dir.File("run");
  Interrupted r = RunAndSignal({"place", "--graph", "rnnlm", "--cluster", "k80x2", "--method", "mcmc", "--max-seconds",
                                "600", "--out", out},
                               "evaluations", SIGINT);
  EXPECT_EQ(r.exit_code, 128 + SIGINT) << r.out;
  EXPECT_NE(r.out.find("stopped early by SIGINT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mcmc: step time"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(out + "/best_placement.json")) << r.out;
  EXPECT_NO_THROW(nlohmann::json::parse(ReadFile(out + "/best_placement.json")));
}

TEST(StopSignalTest, LearnedPlacerStoppedBySigtermWritesPlacementAndCheckpoint) {
  TempDir dir;
  const std::string out = dir.File("run");
  Interrupted r = RunAndSignal({"place", "--graph", "tiny", "--cluster", "k80x2", "--method", "hdp", "--max-seconds", "600",
                                "--workers", "1", "--out", out},
                               "step ", SIGTERM);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.out;
  EXPECT_NE(r.out.find("stopped early by SIGTERM"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(out + "/best_placement.json")) << r.out;
  EXPECT_TRUE(fs::exists(out + "/checkpoint.pt")) << r.out;
  // The checkpoint is whole: the run resumes from it.
  Interrupted resumed = RunAndSignal({"place", "--graph", "tiny", "--cluster", "k80x2", "--method", "hdp", "--max-steps",
                                      "1", "--workers", "1", "--resume", "--out", out},
                                     "", 0);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out;
}

// The rows of a run's curve.csv after its header: one per whole step.
size_t CurveRows(const std::string& out) {
  const std::string text = ReadFile(out + "/curve.csv");
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  return lines - 1;
}

// The 2017 placer (the default method) samples a decision group by group:
// on a graph of 5,000 groups that is minutes. A signal half way through the
// second step's sampling drops that step (no update from a partial batch,
// no curve row) and the run ends as on a budget stop: the first step's best
// placement, its curve row, a checkpoint the run resumes from.
TEST(StopSignalTest, RlStoppedInTheMiddleOfSamplingDropsTheStep) {
  TempDir dir;
  const std::string out = dir.File("run");
  Interrupted r = RunAndSignal({"place", "--graph", "tiny", "--cluster", "k80x2", "--method", "rl", "--max-seconds", "600", "--workers", "1",
                                "--samples-per-step", "4", "--out", out},
                               "devplace: test point sample", SIGTERM, "sample:2");
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.out;
  EXPECT_NE(r.out.find("stopped early by SIGTERM"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(out + "/best_placement.json")) << r.out;
  EXPECT_NO_THROW(nlohmann::json::parse(ReadFile(out + "/best_placement.json")));
  EXPECT_EQ(CurveRows(out), 1u) << ReadFile(out + "/curve.csv");
  EXPECT_TRUE(fs::exists(out + "/checkpoint.pt")) << r.out;
  Interrupted resumed = RunAndSignal({"place", "--graph", "tiny", "--cluster", "k80x2", "--method", "rl", "--max-steps", "2", "--workers", "1",
                                      "--samples-per-step", "4", "--resume", "--out", out},
                                     "", 0);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_EQ(CurveRows(out), 2u) << ReadFile(out + "/curve.csv");
}

// A signal while a batch is being measured (a simulation of a million-op
// graph takes seconds) drops the batch, not the run.
TEST(StopSignalTest, StoppedWhileMeasuringABatchDropsTheStep) {
  TempDir dir;
  const std::string out = dir.File("run");
  // The second step's third placement: 4 measured in step 1, then 2.
  Interrupted r = RunAndSignal({"place", "--graph", "tiny", "--cluster", "k80x2", "--method", "rl", "--max-seconds", "600", "--workers", "1",
                                "--samples-per-step", "4", "--out", out},
                               "devplace: test point measure", SIGINT, "measure:7");
  EXPECT_EQ(r.exit_code, 128 + SIGINT) << r.out;
  EXPECT_NE(r.out.find("stopped early by SIGINT"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(out + "/best_placement.json")) << r.out;
  EXPECT_EQ(CurveRows(out), 1u) << ReadFile(out + "/curve.csv");
}

// guided stopped mid-search writes its best placement and a checkpoint;
// resumed with the budget it had, it ends where the run never stopped ends.
TEST(StopSignalTest, GuidedStoppedMidSearchResumesToTheUninterruptedResult) {
  TempDir dir;
  const std::string out = dir.File("run"), whole = dir.File("whole");
  const std::vector<std::string> common = {"place", "--graph", "rnnlm", "--cluster", "k80x2", "--method", "guided",
                                           "--max-samples", "600", "--json"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = common;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  Interrupted r = RunAndSignal(with({"--out", out}), "devplace: test point chain-move", SIGINT, "chain-move:250");
  EXPECT_EQ(r.exit_code, 128 + SIGINT) << r.out;
  ASSERT_TRUE(fs::exists(out + "/best_placement.json")) << r.out;
  ASSERT_TRUE(fs::exists(out + "/checkpoint.pt")) << r.out;
  Interrupted resumed = RunAndSignal(with({"--out", out, "--resume"}), "", 0);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  Interrupted uninterrupted = RunAndSignal(with({"--out", whole}), "", 0);
  ASSERT_EQ(uninterrupted.exit_code, 0) << uninterrupted.out;
  const nlohmann::json a = nlohmann::json::parse(resumed.out), b = nlohmann::json::parse(uninterrupted.out);
  EXPECT_EQ(a["step_time_s"], b["step_time_s"]);
  EXPECT_EQ(a["samples"], b["samples"]);
  EXPECT_EQ(nlohmann::json::parse(ReadFile(out + "/best_placement.json"))["placement"],
            nlohmann::json::parse(ReadFile(whole + "/best_placement.json"))["placement"]);
}

// A one-shot method stopped half way through its work has nothing to keep:
// it says so, writes no placement, and exits as interrupted.
TEST(StopSignalTest, ListSchedulerStoppedInTheMiddleOfItsScan) {
  TempDir dir;
  const std::string out = dir.File("run");
  Interrupted r = RunAndSignal({"place", "--graph", "rnnlm", "--cluster", "k80x2", "--method", "m_etf", "--out", out},
                               "devplace: test point list-schedule", SIGINT, "list-schedule:1");
  EXPECT_EQ(r.exit_code, 128 + SIGINT) << r.out;
  EXPECT_NE(r.out.find("m_etf stopped after"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stopped early by SIGINT"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out + "/best_placement.json")) << r.out;
}

// compare stopped inside a baseline: that row says it was stopped, the
// methods after it do not run, and the table still prints.
TEST(StopSignalTest, CompareStoppedInsideABaselineSkipsTheRest) {
  Interrupted r = RunAndSignal({"compare", "--graph", "rnnlm", "--cluster", "k80x2", "--methods", "m_topo,m_etf,m_sct"},
                               "devplace: test point list-schedule", SIGTERM, "list-schedule:1");
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.out;
  EXPECT_NE(r.out.find("\nm_topo "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("m_etf: refused: stopped early by a signal before it had a placement"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("m_sct: refused: not run: stopped early by a signal"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("placing with m_sct"), std::string::npos) << r.out;
}

// The backstop: work that cannot poll (a library call such as Scotch's)
// is ended by the watchdog once the grace has passed, with the exit code of
// a stop, and what the run had written stays whole.
TEST(StopSignalTest, WatchdogEndsWorkThatDoesNotStop) {
  TempDir dir;
  const std::string out = dir.File("run");
  Interrupted r = RunAndSignal({"place", "--graph", "tiny", "--cluster", "k80x2", "--method", "rl", "--max-seconds", "600", "--workers", "1",
                                "--samples-per-step", "4", "--out", out},
                               "devplace: test point sample", SIGTERM, "sample:2:stuck");
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.out;
  EXPECT_NE(r.out.find("did not stop in time"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(out + "/best_placement.json")) << r.out;
  EXPECT_NO_THROW(nlohmann::json::parse(ReadFile(out + "/best_placement.json")));
  EXPECT_EQ(CurveRows(out), 1u) << ReadFile(out + "/curve.csv");
}

TEST(StopSignalTest, CompareStoppedByCtrlCStillPrintsItsTable) {
  Interrupted r = RunAndSignal({"compare", "--graph", "rnnlm", "--cluster", "k80x2", "--methods", "m_etf,mcmc,m_topo",
                                "--max-seconds", "600"},
                               "placing with mcmc", SIGINT);
  EXPECT_EQ(r.exit_code, 128 + SIGINT) << r.out;
  for (const char* row : {"\nm_etf ", "\nmcmc ", "\nm_topo "}) EXPECT_NE(r.out.find(row), std::string::npos) << row << r.out;
  // The search's note says it stopped early; the one-shot rows have no such note.
  EXPECT_NE(r.out.find("mcmc: started from"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stopped early by a signal"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("m_topo: stopped early"), std::string::npos) << r.out;
}

}  // namespace
