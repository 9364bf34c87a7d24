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
Interrupted RunAndSignal(const std::vector<std::string>& args, const std::string& wait_for, int signal) {
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
