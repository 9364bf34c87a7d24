// `devplace place` across processes on this host (loopback): RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT set per child as a launcher would.
// Every wait is bounded by DEVPLACE_DIST_TIMEOUT_S (5 s here; 20 s where
// workers run placements for real) inside the program, never by a sleep
// here; ctest's TIMEOUT catches a hang.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct RankRun {
  int exit_code = -1;  // -1: not a normal exit
  int signal = 0;      // the signal that ended it, if one did
  std::string out;     // stdout and stderr together
};

// A port the kernel just handed out and took back: free for the run.
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// curve.csv without its wall-time column: every step's mean and best step
// time, which the noise of each sample (seeded by its place in the batch)
// moves.
std::string CurveWithoutSeconds(const fs::path& path) {
  std::ifstream in(path);
  std::string curve;
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find(','), second = line.find(',', first + 1);
    curve += line.substr(0, first) + line.substr(second) + "\n";
  }
  return curve;
}

class DistributedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("devplace_distributed_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // DEVPLACE_DIST_TIMEOUT_S for the ranks: how long a rank waits for
  // another, which bounds a dead rank's cost to the test.
  std::string timeout_s_ = "5";

  // Starts one process per entry of `args_per_rank` (rank = index) with
  // the four variables plus `env`, and waits for them all. `world_size`
  // may exceed the ranks started (a world that never fills); `ports` gives
  // each rank its MASTER_PORT.
  std::vector<RankRun> RunRanks(const std::vector<std::vector<std::string>>& args_per_rank, int world_size,
                                const std::vector<int>& ports, const std::vector<std::string>& env = {}) {
    std::vector<pid_t> pids;
    for (size_t rank = 0; rank < args_per_rank.size(); ++rank) {
      const fs::path log = dir_ / ("rank" + std::to_string(rank) + ".log");
      pid_t pid = ::fork();
      if (pid == 0) {
        int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        ::setenv("RANK", std::to_string(rank).c_str(), 1);
        ::setenv("WORLD_SIZE", std::to_string(world_size).c_str(), 1);
        ::setenv("MASTER_ADDR", "127.0.0.1", 1);
        ::setenv("MASTER_PORT", std::to_string(ports[rank]).c_str(), 1);
        ::setenv("DEVPLACE_DIST_TIMEOUT_S", timeout_s_.c_str(), 1);
        for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
        std::vector<char*> argv;
        std::string binary = DEVPLACE_BINARY;
        argv.push_back(binary.data());
        std::vector<std::string> args = args_per_rank[rank];
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        ::execv(binary.c_str(), argv.data());
        ::_exit(127);
      }
      pids.push_back(pid);
    }
    std::vector<RankRun> runs(pids.size());
    for (size_t rank = 0; rank < pids.size(); ++rank) {
      int status = 0;
      ::waitpid(pids[rank], &status, 0);
      if (WIFEXITED(status)) runs[rank].exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) runs[rank].signal = WTERMSIG(status);
      runs[rank].out = ReadAll(dir_ / ("rank" + std::to_string(rank) + ".log"));
    }
    return runs;
  }

  std::vector<RankRun> RunSameCommand(int ranks, const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    const int port = FreePort();
    return RunRanks(std::vector<std::vector<std::string>>(ranks, args), ranks, std::vector<int>(ranks, port), env);
  }

  // rl on the 50-op graph for a few steps, with seeded noise so that each
  // sample's noise seed matters.
  std::vector<std::string> PlaceArgs(const std::string& out) const {
    return {"place", "--graph", "tiny", "--cluster", "k80x2", "--method", "rl", "--max-steps", "6", "--samples-per-step",
            "7", "--seed", "3", "--workers", "1", "--jitter", "0.1", "--json", "--out", (dir_ / out).string()};
  }

  // One process, no world: what a distributed run must match.
  std::string OneProcessPlacement() {
    std::vector<std::string> args = PlaceArgs("one");
    std::string command = std::string("env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT ") + DEVPLACE_BINARY;
    for (const std::string& a : args) command += " '" + a + "'";
    EXPECT_EQ(std::system((command + " > /dev/null 2>&1").c_str()), 0);
    return ReadAll(dir_ / "one" / "best_placement.json");
  }

  static void ExpectOneErrorLine(const RankRun& run, const std::string& must_mention) {
    EXPECT_EQ(run.signal, 0) << run.out;
    EXPECT_NE(run.exit_code, 0) << run.out;
    EXPECT_EQ(run.out.rfind("devplace: error: ", 0), 0u) << run.out;
    EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 1) << "not one line: " << run.out;
    EXPECT_NE(run.out.find(must_mention), std::string::npos) << run.out;
  }

  fs::path dir_;
};

// The cores this process may use.
int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

TEST_F(DistributedTest, ThreeProcessesFindWhatOneProcessFinds) {
  const std::string one = OneProcessPlacement();
  ASSERT_FALSE(one.empty());
  std::vector<RankRun> runs = RunSameCommand(3, PlaceArgs("three"));
  for (const RankRun& run : runs) EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(runs[1].out, "");  // workers print nothing and write nothing
  EXPECT_EQ(runs[2].out, "");
  EXPECT_EQ(ReadAll(dir_ / "three" / "best_placement.json"), one);
  EXPECT_EQ(CurveWithoutSeconds(dir_ / "three" / "curve.csv"), CurveWithoutSeconds(dir_ / "one" / "curve.csv"));
  EXPECT_NE(runs[0].out.find("\"step_time_s\""), std::string::npos) << runs[0].out;
}

TEST_F(DistributedTest, WorkersAloneMeasuringFindWhatOneProcessFinds) {
  const std::string one = OneProcessPlacement();
  ASSERT_FALSE(one.empty());
  std::vector<std::string> args = PlaceArgs("workers");
  args.insert(args.end(), {"--controller-measures", "no"});
  std::vector<RankRun> runs = RunSameCommand(3, args);
  for (const RankRun& run : runs) ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(ReadAll(dir_ / "workers" / "best_placement.json"), one);
  EXPECT_EQ(CurveWithoutSeconds(dir_ / "workers" / "curve.csv"), CurveWithoutSeconds(dir_ / "one" / "curve.csv"));
}

TEST_F(DistributedTest, WorkerKilledMidRunIsDroppedAndTheRunFinishes) {
  const std::string one = OneProcessPlacement();
  // Rank 2 sends itself SIGKILL on its second slice.
  std::vector<RankRun> runs = RunSameCommand(3, PlaceArgs("killed"), {"DEVPLACE_TEST_KILL_WORKER=2:1"});
  EXPECT_EQ(runs[2].signal, SIGKILL) << runs[2].out;
  EXPECT_EQ(runs[0].exit_code, 0) << runs[0].out;
  EXPECT_EQ(runs[1].exit_code, 0) << runs[1].out;
  // Its slice of 2 (7 samples: 3, 2 and rank 0's 2) is dealt again over
  // the ranks still measuring: nothing lost, the same search.
  EXPECT_NE(runs[0].out.find("dropped worker rank 2 (no answer within 5 s, DEVPLACE_DIST_TIMEOUT_S); its 2 placements "
                             "go to ranks 1 and 0"),
            std::string::npos)
      << runs[0].out;
  EXPECT_EQ(ReadAll(dir_ / "killed" / "best_placement.json"), one);
  EXPECT_EQ(CurveWithoutSeconds(dir_ / "killed" / "curve.csv"), CurveWithoutSeconds(dir_ / "one" / "curve.csv"));
}

TEST_F(DistributedTest, AWorldThatNeverFillsIsOneLineOnEveryRank) {
  const int port = FreePort();
  std::vector<RankRun> runs = RunRanks({PlaceArgs("a"), PlaceArgs("a")}, 3, {port, port});
  ExpectOneErrorLine(runs[0], "rank(s) 2 of WORLD_SIZE=3 did not join within 5 s");
  ExpectOneErrorLine(runs[1], "distributed run:");
  EXPECT_FALSE(fs::exists(dir_ / "a"));
}

TEST_F(DistributedTest, AWrongPortIsOneLineOnEveryRank) {
  const int port = FreePort(), other = FreePort();
  ASSERT_NE(port, other);
  std::vector<RankRun> runs = RunRanks({PlaceArgs("a"), PlaceArgs("a")}, 2, {port, other});
  ExpectOneErrorLine(runs[0], "rank(s) 1 of WORLD_SIZE=2 did not join");
  ExpectOneErrorLine(runs[1], "cannot reach rank 0's store at 127.0.0.1:" + std::to_string(other));
}

TEST_F(DistributedTest, RanksWithDifferentGraphFilesAreRefusedOnEveryRank) {
  const fs::path a = dir_ / "a.json", b = dir_ / "b.json";
  for (const auto& [path, seed] : {std::pair{a, "1"}, std::pair{b, "2"}}) {
    const std::string command = std::string(DEVPLACE_BINARY) + " generate tiny --seed " + seed + " -o " + path.string() + " > /dev/null 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }
  std::vector<std::string> args0 = PlaceArgs("a"), args1 = PlaceArgs("a");
  args0[2] = a.string();
  args1[2] = b.string();
  const int port = FreePort();
  std::vector<RankRun> runs = RunRanks({args0, args1}, 2, {port, port});
  ExpectOneErrorLine(runs[0], "rank 1's graph differs from rank 0's");
  ExpectOneErrorLine(runs[1], "rank 1's graph differs from rank 0's");
}

// A local search (mcmc, guided) on a graph where chains differ: each rank
// runs its own chain and they share their best every 100 evaluations.
// guided without its polish: the bound against rank 0's chain alone is the
// sharing's, and the polish's greedy last tenth lands a lone chain of 700
// evaluations on tiny anywhere within a few percent (seed 4: 3 % ahead of
// the three chains), more than the margin below allows.
std::vector<std::string> ChainArgs(const std::string& method, const std::string& out, const fs::path& dir) {
  std::vector<std::string> args = {"place", "--graph", "tiny", "--cluster", "k80x4", "--method", method, "--max-evaluations", "700",
                                   "--seed", "4", "--out", (dir / out).string()};
  if (method == "guided") args.insert(args.end(), {"--guided-polish", "0"});
  return args;
}

// The step time of the result line ("METHOD: step time 0.012345 s ...").
double StepTimeOf(const std::string& out) {
  const size_t at = out.rfind(": step time ");
  EXPECT_NE(at, std::string::npos) << out;
  return at == std::string::npos ? 0 : std::stod(out.substr(at + 12));
}

class ChainsAcrossProcessesTest : public DistributedTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(ChainsAcrossProcessesTest, ThreeChainsGiveOneResultRunAfterRunAndNoWorseThanRankZerosChainAlone) {
  const std::string method = GetParam();
  std::vector<std::string> one_args = ChainArgs(method, "one", dir_);
  std::string command = std::string("env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT ") + DEVPLACE_BINARY;
  for (const std::string& a : one_args) command += " '" + a + "'";
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  std::string one_out;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) one_out.append(buffer, n);
  ASSERT_EQ(::pclose(pipe), 0) << one_out;

  std::vector<std::string> outs;
  for (const char* out : {"first", "second"}) {
    std::vector<RankRun> runs = RunSameCommand(3, ChainArgs(method, out, dir_));
    for (const RankRun& run : runs) ASSERT_EQ(run.exit_code, 0) << run.out;
    EXPECT_EQ(runs[1].out, "");  // workers print nothing and write nothing
    EXPECT_EQ(runs[2].out, "");
    EXPECT_NE(runs[0].out.find("the best of 3 chains across processes"), std::string::npos) << runs[0].out;
    // mcmc's moves are exact; guided's scorer is a network, whose
    // floating point differs across CPUs, so its bound has a margin (its
    // chain, moved by the others' bests, may end a hair behind its own).
    const double margin = method == "guided" ? 1.02 : 1.0;
    EXPECT_LE(StepTimeOf(runs[0].out), margin * StepTimeOf(one_out)) << runs[0].out << "\n" << one_out;
    outs.push_back(ReadAll(dir_ / out / "best_placement.json"));
  }
  ASSERT_FALSE(outs[0].empty());
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_FALSE(fs::exists(dir_ / "first" / "rank1"));
}

INSTANTIATE_TEST_SUITE_P(Methods, ChainsAcrossProcessesTest, ::testing::Values("mcmc", "guided"));

TEST_F(DistributedTest, AChainRankKilledMidRunIsDroppedAndTheSearchFinishes) {
  // Rank 2 sends itself SIGKILL at its third share.
  std::vector<RankRun> runs = RunSameCommand(3, ChainArgs("mcmc", "killed", dir_), {"DEVPLACE_TEST_KILL_WORKER=2:2"});
  EXPECT_EQ(runs[2].signal, SIGKILL) << runs[2].out;
  EXPECT_EQ(runs[0].exit_code, 0) << runs[0].out;
  EXPECT_EQ(runs[1].exit_code, 0) << runs[1].out;
  EXPECT_NE(runs[0].out.find("dropped rank 2's chain"), std::string::npos) << runs[0].out;
  EXPECT_NE(runs[0].out.find("the best of 2 chains across processes"), std::string::npos) << runs[0].out;
  EXPECT_FALSE(ReadAll(dir_ / "killed" / "best_placement.json").empty());
}

TEST_F(DistributedTest, ChainsAcrossProcessesRefuseABudgetOfSeconds) {
  std::vector<std::string> args = ChainArgs("mcmc", "a", dir_);
  args[7] = "--max-seconds";
  args[8] = "5";
  std::vector<RankRun> runs = RunSameCommand(2, args);
  ExpectOneErrorLine(runs[0], "its budget is --max-evaluations");
  ExpectOneErrorLine(runs[1], "its budget is --max-evaluations");
}

TEST_F(DistributedTest, ShareEveryIsRefusedForAMethodWithoutChains) {
  std::vector<std::string> args = PlaceArgs("a");
  args.insert(args.end(), {"--share-every", "10"});
  std::vector<RankRun> runs = RunSameCommand(2, args);
  ExpectOneErrorLine(runs[0], "--share-every applies to mcmc's and guided's chains");
  ExpectOneErrorLine(runs[1], "--share-every applies to mcmc's and guided's chains");
}

TEST_F(DistributedTest, SomeVariablesWithoutTheOthersAreOneLine) {
  const std::string command = std::string("env -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT RANK=0 ") + DEVPLACE_BINARY +
                              " place --graph tiny --cluster k80x2 --out " + (dir_ / "a").string() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  const int status = ::pclose(pipe);
  RankRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = out;
  ExpectOneErrorLine(run, "WORLD_SIZE, MASTER_ADDR, MASTER_PORT not set");
}

// `place --controllers C` across processes: the ranks form C groups of
// contiguous ranks, each led by its first, a controller with its own copy
// of the policy and its own seed stream, whose batches its group measures;
// the controllers sum their gradients through rank 0's store every update.
class ControllersAcrossProcessesTest : public DistributedTest {
 protected:
  std::vector<std::string> ControllersArgs(const std::string& out, const std::string& controllers = "2") const {
    std::vector<std::string> args = PlaceArgs(out);
    args.insert(args.end(), {"--controllers", controllers});
    return args;
  }
  static std::vector<double> Values(const fs::path& path) {
    std::ifstream in(path);
    std::vector<double> values;
    for (double x; in >> x;) values.push_back(x);
    return values;
  }
  static nlohmann::json JsonOf(const RankRun& run) {
    const size_t brace = run.out.find('{');
    if (brace == std::string::npos) return nullptr;
    return nlohmann::json::parse(run.out.substr(brace), nullptr, /*allow_exceptions=*/false);
  }
};

// Ranks 0-1 and 2-3: two controllers, 6 updates of 7 samples each. The same
// seed gives the same placement, curve and network run after run, and the
// two controllers' networks are the same bits at the start (rank 0's) and
// after every update.
TEST_F(ControllersAcrossProcessesTest, FourProcessesWithTwoControllersGiveOneResultRunAfterRunAndOneNetwork) {
  for (const std::string run : {"a", "b"}) {
    std::vector<RankRun> runs = RunSameCommand(4, ControllersArgs(run), {"DEVPLACE_TEST_PLACE_PARAMETERS=" + (dir_ / ("p" + run)).string()});
    for (const RankRun& r : runs) ASSERT_EQ(r.exit_code, 0) << r.out;
    // The other controller and the workers print and write nothing.
    EXPECT_EQ(runs[1].out, "");
    EXPECT_EQ(runs[2].out, "");
    EXPECT_EQ(runs[3].out, "");
    const nlohmann::json result = JsonOf(runs[0]);
    ASSERT_TRUE(result.is_object()) << runs[0].out;
    EXPECT_EQ(result["controllers"], 2) << runs[0].out;
    ASSERT_EQ(result["controller_samples"].size(), 2u) << runs[0].out;
    EXPECT_EQ(result["controller_samples"][1], 6 * 7) << runs[0].out;
    EXPECT_EQ(result["controller_samples"][0].get<int64_t>() + result["controller_samples"][1].get<int64_t>(),
              result["samples"].get<int64_t>())
        << runs[0].out;

    const fs::path p = dir_ / ("p" + run);
    const std::vector<double> start0 = Values(p.string() + ".start.controller0"), end0 = Values(p.string() + ".end.controller0");
    ASSERT_GT(start0.size(), 100u);
    EXPECT_EQ(start0, Values(p.string() + ".start.controller1"));
    EXPECT_EQ(end0, Values(p.string() + ".end.controller1"));
    EXPECT_NE(start0, end0);  // the updates moved them
  }
  EXPECT_EQ(ReadAll(dir_ / "a" / "best_placement.json"), ReadAll(dir_ / "b" / "best_placement.json"));
  EXPECT_FALSE(ReadAll(dir_ / "a" / "best_placement.json").empty());
  EXPECT_EQ(CurveWithoutSeconds(dir_ / "a" / "curve.csv"), CurveWithoutSeconds(dir_ / "b" / "curve.csv"));
  EXPECT_EQ(Values(dir_.string() + "/pa.end.controller0"), Values(dir_.string() + "/pb.end.controller0"));
}

// 3 ranks in 2 groups, as equal as possible: ranks 0-1 and rank 2, a
// controller with no worker, which measures its batches itself.
TEST_F(ControllersAcrossProcessesTest, ThreeProcessesFormGroupsAsEqualAsPossible) {
  std::vector<RankRun> runs = RunSameCommand(3, ControllersArgs("three"));
  for (const RankRun& r : runs) ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(runs[1].out, "");
  EXPECT_EQ(runs[2].out, "");
  const nlohmann::json result = JsonOf(runs[0]);
  ASSERT_TRUE(result.is_object()) << runs[0].out;
  EXPECT_EQ(result["controllers"], 2) << runs[0].out;
  EXPECT_EQ(result["controller_samples"][1], 6 * 7) << runs[0].out;
  EXPECT_TRUE(fs::exists(dir_ / "three" / "best_placement.json"));
}

TEST_F(ControllersAcrossProcessesTest, BadControllerCountsAreOneLineOnEveryRank) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"3", "--controllers 3 with WORLD_SIZE=2: each controller is a rank of its own"},
      {"0", "--controllers"},
      {"-1", "--controllers"},
      {"two", "--controllers"}};
  for (const auto& [value, says] : cases) {
    std::vector<RankRun> runs = RunSameCommand(2, ControllersArgs("bad", value));
    for (const RankRun& run : runs) ExpectOneErrorLine(run, says);
    EXPECT_FALSE(fs::exists(dir_ / "bad"));
  }
  // Chains share no parameters.
  std::vector<std::string> mcmc = {"place", "--graph", "tiny", "--cluster", "k80x2", "--method", "mcmc", "--max-evaluations",
                                   "40", "--controllers", "2", "--out", (dir_ / "bad").string()};
  std::vector<RankRun> runs = RunSameCommand(2, mcmc);
  for (const RankRun& run : runs) ExpectOneErrorLine(run, "--controllers applies to the learned placers");
}

// Rank 2, the second controller, killed at its second report: rank 0 ends
// with one line naming it within the timeout, and so does every other rank
// (rank 0's worker told so, rank 2's worker finding the store gone).
TEST_F(ControllersAcrossProcessesTest, AControllerKilledMidRunIsOneLineOnEveryOtherRank) {
  std::vector<RankRun> runs = RunSameCommand(4, ControllersArgs("killed"), {"DEVPLACE_TEST_KILL_RANK=2:1"});
  EXPECT_EQ(runs[2].signal, SIGKILL) << runs[2].out;
  ExpectOneErrorLine(runs[0], "rank 2 sent no report within 5 s");
  // Told rank 0 failed, or finding its store gone first (rank 0 ends right
  // after saying so): either is one line.
  ExpectOneErrorLine(runs[1], "distributed run:");
  ExpectOneErrorLine(runs[3], "distributed run: rank 3");
}

// Rank 0 killed at its report after update 4, before that update's
// checkpoint (one every update here): the same command with --resume goes
// on from update 3's, each controller from its own baseline and generator
// state, and ends where an uninterrupted run ends: the same network on both
// controllers, the same placement, curve and samples.
TEST_F(ControllersAcrossProcessesTest, AKilledRunResumesToTheUninterruptedResult) {
  std::vector<std::string> args = ControllersArgs("p");
  args.insert(args.end(), {"--checkpoint-every", "1"});
  std::vector<RankRun> killed = RunSameCommand(4, args, {"DEVPLACE_TEST_KILL_RANK=0:3"});
  EXPECT_EQ(killed[0].signal, SIGKILL) << killed[0].out;
  ExpectOneErrorLine(killed[2], "distributed run:");
  ASSERT_TRUE(fs::exists(dir_ / "p" / "checkpoint.pt"));

  args.push_back("--resume");
  std::vector<RankRun> resumed = RunSameCommand(4, args, {"DEVPLACE_TEST_PLACE_PARAMETERS=" + (dir_ / "resumed").string()});
  for (const RankRun& run : resumed) ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(resumed[2].out, "");

  std::vector<std::string> whole = ControllersArgs("whole");
  whole.insert(whole.end(), {"--checkpoint-every", "1"});
  std::vector<RankRun> uninterrupted = RunSameCommand(4, whole, {"DEVPLACE_TEST_PLACE_PARAMETERS=" + (dir_ / "whole").string()});
  for (const RankRun& run : uninterrupted) ASSERT_EQ(run.exit_code, 0) << run.out;

  const std::vector<double> after_resume = Values(dir_.string() + "/resumed.end.controller0");
  ASSERT_GT(after_resume.size(), 100u);
  EXPECT_EQ(after_resume, Values(dir_.string() + "/resumed.end.controller1"));
  EXPECT_EQ(after_resume, Values(dir_.string() + "/whole.end.controller0"));
  EXPECT_EQ(ReadAll(dir_ / "p" / "best_placement.json"), ReadAll(dir_ / "whole" / "best_placement.json"));
  EXPECT_EQ(CurveWithoutSeconds(dir_ / "p" / "curve.csv"), CurveWithoutSeconds(dir_ / "whole" / "curve.csv"));
  const nlohmann::json resumed_result = JsonOf(resumed[0]), whole_result = JsonOf(uninterrupted[0]);
  ASSERT_TRUE(resumed_result.is_object()) << resumed[0].out;
  EXPECT_EQ(resumed_result["controller_samples"], whole_result["controller_samples"]) << resumed[0].out;
  EXPECT_EQ(resumed_result["samples"], whole_result["samples"]) << resumed[0].out;
}

// A checkpoint of one controller does not resume under two.
TEST_F(ControllersAcrossProcessesTest, ResumingAnotherControllerCountIsOneLine) {
  std::vector<std::string> args = ControllersArgs("p", "1");
  args.insert(args.end(), {"--checkpoint-every", "1"});
  std::vector<RankRun> runs = RunSameCommand(2, args);
  for (const RankRun& run : runs) ASSERT_EQ(run.exit_code, 0) << run.out;
  std::vector<std::string> two = ControllersArgs("p", "2");
  two.insert(two.end(), {"--checkpoint-every", "1", "--resume"});
  runs = RunSameCommand(2, two);
  ExpectOneErrorLine(runs[0], "checkpoint has 1 controllers; resume with the same --controllers");
  ExpectOneErrorLine(runs[1], "distributed run:");
}

// `place --reward measured` across processes: each rank runs the placements
// it is sent on the devices of its own --cluster (as `clusters --detect`
// writes them, here without measuring: CPU devices on the cores this
// process may use).
class DistributedMeasuredTest : public DistributedTest {
 protected:
  // A worker's slice of real runs answers only when they have run: on a
  // loaded 2-core host (ctest -j2 beside another multi-process test) two
  // runs of `tiny` took over 5 s, and a live worker was dropped.
  DistributedMeasuredTest() { timeout_s_ = "20"; }

  // A cluster file of `devices` CPU devices, one core each, named `name`.
  fs::path HostCluster(const std::string& file, const std::string& name, int devices) const {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cores;
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
      for (int core = 0; core < CPU_SETSIZE; ++core) {
        if (CPU_ISSET(core, &set)) cores.push_back(core);
      }
    }
    if (cores.empty()) cores.push_back(0);
    std::string text = R"({"format": "devplace-cluster", "version": 1, "name": ")" + name + R"(", "devices": [)";
    for (int d = 0; d < devices; ++d) {
      // A second device on a core this process may not use, where it has
      // one core only: the device count differs all the same.
      const int core = d < static_cast<int>(cores.size()) ? cores[d] : cores.back() + d;
      text += std::string(d ? ", " : "") + R"({"name": "cpu:)" + std::to_string(d) +
              R"(", "kind": "cpu", "peak_tflops": 0.1, "memory_bandwidth_gb_per_s": 10, "memory_gib": 4, "cores": [)" +
              std::to_string(core) + "]}";
    }
    text += R"(], "links": [)";
    for (int d = 1; d < devices; ++d) {
      text += std::string(d > 1 ? ", " : "") + R"({"between": ["cpu:0", "cpu:)" + std::to_string(d) +
              R"("], "bandwidth_gb_per_s": 10, "latency_us": 1})";
    }
    text += "]}";
    const fs::path path = dir_ / file;
    std::ofstream(path) << text;
    return path;
  }
  // rl on the 50-op graph, every sample run for real (2 steps, the first
  // dropped), on `cluster`.
  std::vector<std::string> MeasuredArgs(const fs::path& cluster, const std::string& out) const {
    return {"place", "--graph", "tiny", "--cluster", cluster.string(), "--method", "rl", "--reward", "measured",
            "--max-steps", "2", "--samples-per-step", "4", "--run-steps", "2", "--seed", "3", "--json", "--out",
            (dir_ / out).string()};
  }
};

TEST_F(DistributedMeasuredTest, TwoProcessesMeasureOnTheirOwnDevices) {
  // Each rank its own file, as each host would have: only the device count
  // and kinds are compared, so the names differ freely.
  const fs::path controller = HostCluster("host0.json", "controller-host", 1);
  const fs::path worker = HostCluster("host1.json", "worker-host", 1);
  const int port = FreePort();
  std::vector<RankRun> runs = RunRanks({MeasuredArgs(controller, "m"), MeasuredArgs(worker, "m")}, 2, {port, port});
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].out;
  ASSERT_EQ(runs[1].exit_code, 0) << runs[1].out;
  EXPECT_EQ(runs[1].out, "");  // the worker prints nothing and writes nothing
  const nlohmann::json out = nlohmann::json::parse(runs[0].out.substr(runs[0].out.find('{')));
  EXPECT_EQ(out["reward"], "measured");
  ASSERT_TRUE(out["step_time_s"].is_number()) << out.dump();
  EXPECT_GT(out["step_time_s"].get<double>(), 0);
  EXPECT_EQ(out["step_time_s"], out["measured_step_time_s"]);  // what the user gets is the real run's
  // 8 samples in 2 batches of 4, split 2 and 2: the worker ran its halves.
  EXPECT_GE(out["real_runs_on_workers"].get<int64_t>(), 4) << out.dump();
  EXPECT_GT(out["real_runs"].get<int64_t>(), out["real_runs_on_workers"].get<int64_t>());
  const nlohmann::json placement = nlohmann::json::parse(ReadAll(dir_ / "m" / "best_placement.json"));
  EXPECT_EQ(placement["placement"].size(), 50u);  // every op of tiny, on the one device
  for (const auto& [op, device] : placement["placement"].items()) EXPECT_EQ(device, "cpu:0") << op;
}

TEST_F(DistributedMeasuredTest, AWorkerKilledMidRunIsDroppedAndItsPlacementsMeasuredOnRankZero) {
  const fs::path host = HostCluster("host.json", "host", 1);
  // The worker sends itself SIGKILL on its second slice.
  std::vector<RankRun> runs = RunSameCommand(2, MeasuredArgs(host, "k"), {"DEVPLACE_TEST_KILL_WORKER=1:1"});
  EXPECT_EQ(runs[1].signal, SIGKILL) << runs[1].out;
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].out;
  EXPECT_NE(runs[0].out.find("dropped worker rank 1"), std::string::npos) << runs[0].out;
  const nlohmann::json out = nlohmann::json::parse(runs[0].out.substr(runs[0].out.find('{')));
  EXPECT_EQ(out["real_runs_on_workers"].get<int64_t>(), 2) << out.dump();  // its first slice only
  EXPECT_EQ(out["samples"].get<int64_t>(), 8);  // no sample lost
  EXPECT_TRUE(out["step_time_s"].is_number()) << out.dump();
}

TEST_F(DistributedMeasuredTest, AKilledWorkersPlacementsAreSentToAnotherWorker) {
  const fs::path host = HostCluster("host.json", "host", 1);
  std::vector<std::string> args = MeasuredArgs(host, "r");
  args.insert(args.end(), {"--controller-measures", "no"});
  // Rank 2 sends itself SIGKILL on its second slice: batch 2's 2 of 4.
  std::vector<RankRun> runs = RunSameCommand(3, args, {"DEVPLACE_TEST_KILL_WORKER=2:1"});
  EXPECT_EQ(runs[2].signal, SIGKILL) << runs[2].out;
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].out;
  ASSERT_EQ(runs[1].exit_code, 0) << runs[1].out;
  EXPECT_NE(runs[0].out.find("dropped worker rank 2 (no answer within 20 s, DEVPLACE_DIST_TIMEOUT_S); its 2 placements "
                             "go to rank 1\n"),
            std::string::npos)
      << runs[0].out;
  const nlohmann::json out = nlohmann::json::parse(runs[0].out.substr(runs[0].out.find('{')));
  EXPECT_EQ(out["samples"].get<int64_t>(), 8);  // no sample lost
  // Every sample ran on a worker, the dead one's second slice on rank 1,
  // none on rank 0's devices but the final run.
  EXPECT_EQ(out["real_runs_on_workers"].get<int64_t>(), 8) << out.dump();
  EXPECT_TRUE(out["step_time_s"].is_number()) << out.dump();
}

TEST_F(DistributedMeasuredTest, WithoutTheControllerMeasuringTheWorkerRunsEveryPlacement) {
  const fs::path host = HostCluster("host.json", "host", 1);
  std::vector<std::string> args = MeasuredArgs(host, "w");
  args.insert(args.end(), {"--controller-measures", "no"});
  std::vector<RankRun> runs = RunSameCommand(2, args);
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].out;
  ASSERT_EQ(runs[1].exit_code, 0) << runs[1].out;
  const nlohmann::json out = nlohmann::json::parse(runs[0].out.substr(runs[0].out.find('{')));
  // 8 samples in 2 batches of 4: all on the worker; rank 0 ran only the
  // final placement (and any probe the method makes outside its batches).
  EXPECT_EQ(out["samples"].get<int64_t>(), 8);
  EXPECT_EQ(out["real_runs_on_workers"].get<int64_t>(), 8) << out.dump();
  EXPECT_GE(out["real_runs"].get<int64_t>(), 9) << out.dump();
  EXPECT_TRUE(out["step_time_s"].is_number()) << out.dump();
}

TEST_F(DistributedMeasuredTest, ControllerMeasuresIsRefusedForAChain) {
  std::vector<std::string> args = ChainArgs("mcmc", "a", dir_);
  args.insert(args.end(), {"--controller-measures", "no"});
  std::vector<RankRun> runs = RunSameCommand(2, args);
  ExpectOneErrorLine(runs[0], "--controller-measures applies to the learned methods' batches");
  ExpectOneErrorLine(runs[1], "--controller-measures applies to the learned methods' batches");
}

TEST_F(DistributedMeasuredTest, AWorkerWithAnotherDeviceCountIsRefusedOnEveryRank) {
  const fs::path controller = HostCluster("host0.json", "host", 1);
  const fs::path worker = HostCluster("host1.json", "host", 2);
  const int port = FreePort();
  std::vector<RankRun> runs = RunRanks({MeasuredArgs(controller, "x"), MeasuredArgs(worker, "x")}, 2, {port, port});
  for (const RankRun& run : runs) {
    ExpectOneErrorLine(run, "rank 1's --cluster devices differs from rank 0's ('2 devices: cpu, cpu");
    ExpectOneErrorLine(run, "rank 0 has '1 device: cpu'");
  }
  EXPECT_FALSE(fs::exists(dir_ / "x"));
}

// mcmc on the 50-op graph over 2 devices, every evaluation run for real
// (2 steps, the first dropped), chains sharing every 10 evaluations.
std::vector<std::string> MeasuredChainArgs(const fs::path& cluster, const fs::path& out) {
  return {"place", "--graph", "tiny", "--cluster", cluster.string(), "--method", "mcmc", "--reward", "measured",
          "--max-evaluations", "40", "--share-every", "10", "--run-steps", "2", "--seed", "3", "--json", "--out", out.string()};
}

TEST_F(DistributedMeasuredTest, TwoMcmcChainsMeasureOnTheirOwnDevicesAndRankZeroStatesTheMeasuredTime) {
  // A chain moves ops between devices: two, a core each (the ranks share
  // the host's cores here, as two hosts would not).
  if (UsableCores() < 2) GTEST_SKIP() << "needs 2 cores for 2 CPU devices";
  const fs::path controller = HostCluster("host0.json", "controller-host", 2);
  const fs::path worker = HostCluster("host1.json", "worker-host", 2);
  const int port = FreePort();
  std::vector<RankRun> runs =
      RunRanks({MeasuredChainArgs(controller, dir_ / "c"), MeasuredChainArgs(worker, dir_ / "c")}, 2, {port, port});
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].out;
  ASSERT_EQ(runs[1].exit_code, 0) << runs[1].out;
  EXPECT_EQ(runs[1].out, "");  // the worker prints nothing and writes nothing
  const nlohmann::json out = nlohmann::json::parse(runs[0].out.substr(runs[0].out.find('{')));
  EXPECT_EQ(out["reward"], "measured");
  EXPECT_EQ(out["oom"], false);
  ASSERT_TRUE(out["step_time_s"].is_number()) << out.dump();
  EXPECT_GT(out["step_time_s"].get<double>(), 0);
  EXPECT_EQ(out["step_time_s"], out["measured_step_time_s"]);  // the final placement's real run
  EXPECT_GT(out["search_best_step_time_s"].get<double>(), 0) << out.dump();  // as the chains measured it
  EXPECT_GT(out["real_runs"].get<int64_t>(), 0);
  const nlohmann::json placement = nlohmann::json::parse(ReadAll(dir_ / "c" / "best_placement.json"));
  EXPECT_EQ(placement["placement"].size(), 50u);
  for (const auto& [op, device] : placement["placement"].items()) {
    EXPECT_TRUE(device == "cpu:0" || device == "cpu:1") << op << " on " << device;
  }
}

TEST_F(DistributedMeasuredTest, AMeasuringChainKilledMidRunDoesNotStopRankZero) {
  if (UsableCores() < 2) GTEST_SKIP() << "needs 2 cores for 2 CPU devices";
  const fs::path host = HostCluster("host.json", "host", 2);
  // The worker sends itself SIGKILL at its second share.
  std::vector<RankRun> runs = RunSameCommand(2, MeasuredChainArgs(host, dir_ / "k"), {"DEVPLACE_TEST_KILL_WORKER=1:1"});
  EXPECT_EQ(runs[1].signal, SIGKILL) << runs[1].out;
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].out;
  EXPECT_NE(runs[0].out.find("dropped rank 1's chain"), std::string::npos) << runs[0].out;
  const nlohmann::json out = nlohmann::json::parse(runs[0].out.substr(runs[0].out.find('{')));
  EXPECT_GE(out["samples"].get<int64_t>(), 40);  // rank 0's chain spent its whole budget
  ASSERT_TRUE(out["step_time_s"].is_number()) << out.dump();
  EXPECT_EQ(out["step_time_s"], out["measured_step_time_s"]);
  EXPECT_FALSE(ReadAll(dir_ / "k" / "best_placement.json").empty());
}

// --reward calibrated: the simulator with an --op-times table, the best
// few placements run for real on rank 0 now and then.
class DistributedCalibratedTest : public DistributedMeasuredTest {
 protected:
  void SetUp() override {
    DistributedMeasuredTest::SetUp();
    // Two devices where this process has two cores: rank 0 runs them for real.
    host_ = HostCluster("host.json", "host", std::min(2, UsableCores()));
    times_ = dir_ / "times.json";
    std::ofstream(times_) << R"({"times": [{"op_type": "MatMul", "shape": [64, 256], "device_kind": "cpu", "time_us": 50}]})";
  }
  std::vector<std::string> CalibratedArgs(const std::string& method, const std::string& out) const {
    std::vector<std::string> args = {"place", "--graph", "tiny", "--cluster", host_.string(), "--op-times", times_.string(),
                                     "--method", method, "--reward", "calibrated", "--seed", "3", "--json", "--out",
                                     (dir_ / out).string()};
    if (method == "rl") {
      args.insert(args.end(), {"--max-steps", "12", "--samples-per-step", "4", "--workers", "1"});
    } else {
      args.insert(args.end(), {"--max-evaluations", "300"});
    }
    return args;
  }
  fs::path host_, times_;
};

TEST_F(DistributedCalibratedTest, TwoProcessesSimulateAsOneProcessAndRankZeroRunsTheBestForReal) {
  std::vector<std::string> one_args = CalibratedArgs("rl", "one");
  std::string command = std::string("env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT ") + DEVPLACE_BINARY;
  for (const std::string& a : one_args) command += " '" + a + "'";
  ASSERT_EQ(std::system((command + " > /dev/null 2>&1").c_str()), 0);
  std::vector<RankRun> runs = RunSameCommand(2, CalibratedArgs("rl", "two"));
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].out;
  ASSERT_EQ(runs[1].exit_code, 0) << runs[1].out;
  EXPECT_EQ(runs[1].out, "");
  // The rewards are the calibrated simulator's, wherever simulated: the
  // same search as one process.
  EXPECT_EQ(ReadAll(dir_ / "two" / "best_placement.json"), ReadAll(dir_ / "one" / "best_placement.json"));
  EXPECT_EQ(CurveWithoutSeconds(dir_ / "two" / "curve.csv"), CurveWithoutSeconds(dir_ / "one" / "curve.csv"));
  const nlohmann::json out = nlohmann::json::parse(runs[0].out.substr(runs[0].out.find('{')));
  EXPECT_EQ(out["step_time_s"], out["simulated_step_time_s"]);
  EXPECT_GT(out["measured_step_time_s"].get<double>(), 0);
  EXPECT_FALSE(out["remeasured"].empty());  // the best few, run for real on rank 0
  EXPECT_FALSE(out.contains("real_runs_on_workers"));  // the workers only simulate
  EXPECT_TRUE(fs::exists(dir_ / "two" / "remeasured.json"));
}

TEST_F(DistributedCalibratedTest, TwoMcmcChainsEndWithRankZerosRealRunOfTheBest) {
  std::vector<RankRun> runs = RunSameCommand(2, CalibratedArgs("mcmc", "m"));
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].out;
  ASSERT_EQ(runs[1].exit_code, 0) << runs[1].out;
  EXPECT_EQ(runs[1].out, "");
  const nlohmann::json out = nlohmann::json::parse(runs[0].out.substr(runs[0].out.find('{')));
  EXPECT_EQ(out["reward"], "calibrated");
  EXPECT_EQ(out["step_time_s"], out["simulated_step_time_s"]);
  EXPECT_GT(out["measured_step_time_s"].get<double>(), 0);
  EXPECT_EQ(out["real_runs"].get<int64_t>(), 1);  // the final run, on rank 0
}

// `devplace train` across processes: the graphs dealt one a rank, the
// gradients summed every optimiser step.
class DistributedTrainTest : public DistributedTest {
 protected:
  void SetUp() override {
    DistributedTest::SetUp();
    const std::string command = std::string(DEVPLACE_BINARY) + " generate synthetic --ops 60 --seed 2 -o " + (dir_ / "b.json").string() +
                                " > /dev/null 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }
  std::vector<std::string> TrainArgs(const std::string& policy, const std::string& steps = "3") const {
    return {"train", "--graphs", "tiny," + (dir_ / "b.json").string(), "--cluster", "k80x2", "--max-steps", steps,
            "--samples-per-step", "6", "--seed", "3", "--workers", "1", "--quiet", "-o", (dir_ / policy).string()};
  }
  static std::vector<double> Values(const fs::path& path) {
    std::ifstream in(path);
    std::vector<double> values;
    for (double x; in >> x;) values.push_back(x);
    return values;
  }
  int OneProcess(const std::vector<std::string>& args, const std::string& env) {
    std::string command = std::string("env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT ") + env + " " + DEVPLACE_BINARY;
    for (const std::string& a : args) command += " '" + a + "'";
    return std::system((command + " > /dev/null 2>&1").c_str());
  }
};

TEST_F(DistributedTrainTest, TwoProcessesKeepOneNetworkAndTrainAsOneProcessDoes) {
  ASSERT_EQ(OneProcess(TrainArgs("one.policy"), "DEVPLACE_TEST_TRAIN_PARAMETERS=" + (dir_ / "one").string()), 0);
  std::vector<RankRun> runs = RunSameCommand(2, TrainArgs("two.policy"), {"DEVPLACE_TEST_TRAIN_PARAMETERS=" + (dir_ / "two").string()});
  for (const RankRun& run : runs) ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(runs[1].out, "");  // the worker prints nothing and writes nothing
  EXPECT_NE(runs[0].out.find("trained 3 updates"), std::string::npos) << runs[0].out;
  EXPECT_NE(runs[0].out.find("on 2 graphs across 2 processes"), std::string::npos) << runs[0].out;
  EXPECT_TRUE(fs::exists(dir_ / "two.policy"));
  EXPECT_TRUE(fs::exists(dir_ / "two.policy.checkpoint"));

  // Every optimiser step applied the same summed gradients on both ranks:
  // the same network, to the bit.
  const std::vector<double> rank0 = Values(dir_ / "two.trained.rank0"), rank1 = Values(dir_ / "two.trained.rank1");
  ASSERT_GT(rank0.size(), 100u);
  EXPECT_EQ(rank0, rank1);

  // One process training both graphs: the same samples (each graph its own
  // stream) and the same mean loss, whose gradient one process sums inside
  // autograd and two processes sum after it, so the parameters agree to
  // float rounding, far closer than the training moved them.
  const std::vector<double> one = Values(dir_ / "one.trained.rank0"), initial = Values(dir_ / "one.initial.rank0");
  ASSERT_EQ(one.size(), rank0.size());
  ASSERT_EQ(initial.size(), rank0.size());
  EXPECT_EQ(initial, Values(dir_ / "two.initial.rank1"));
  double apart = 0, moved = 0;
  for (size_t i = 0; i < one.size(); ++i) {
    apart = std::max(apart, std::abs(one[i] - rank0[i]));
    moved = std::max(moved, std::abs(one[i] - initial[i]));
  }
  EXPECT_LT(apart, 1e-5) << "moved " << moved;
  EXPECT_GT(moved, 100 * apart + 1e-4) << "apart " << apart;
}

// Rank 0 killed after update 3, before its checkpoint: the same command
// with --resume continues from update 2's checkpoint (every update, here)
// and ends where an uninterrupted run ends.
TEST_F(DistributedTrainTest, AKilledControllerResumesWithTheSameCommand) {
  std::vector<std::string> args = TrainArgs("p", "5");
  args.insert(args.end(), {"--checkpoint-every", "1"});
  std::vector<RankRun> killed = RunSameCommand(2, args, {"DEVPLACE_TEST_KILL_RANK=0:3"});
  EXPECT_EQ(killed[0].signal, SIGKILL) << killed[0].out;
  ExpectOneErrorLine(killed[1], "lost rank 0's store");
  ASSERT_TRUE(fs::exists(dir_ / "p.checkpoint"));

  args.push_back("--resume");
  std::vector<RankRun> resumed = RunSameCommand(2, args, {"DEVPLACE_TEST_TRAIN_PARAMETERS=" + (dir_ / "resumed").string()});
  for (const RankRun& run : resumed) ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(resumed[0].out.find("trained 5 updates"), std::string::npos) << resumed[0].out;
  EXPECT_EQ(resumed[1].out, "");

  std::vector<std::string> whole = TrainArgs("whole", "5");
  whole.insert(whole.end(), {"--checkpoint-every", "1"});
  std::vector<RankRun> uninterrupted = RunSameCommand(2, whole, {"DEVPLACE_TEST_TRAIN_PARAMETERS=" + (dir_ / "whole").string()});
  for (const RankRun& run : uninterrupted) ASSERT_EQ(run.exit_code, 0) << run.out;
  const std::vector<double> after_resume = Values(dir_ / "resumed.trained.rank0");
  ASSERT_FALSE(after_resume.empty());
  // The checkpoint holds every rank's state (its pairs' baselines and start
  // placements, Adam's moments): the resumed run is the uninterrupted one.
  EXPECT_EQ(after_resume, Values(dir_ / "resumed.trained.rank1"));
  EXPECT_EQ(after_resume, Values(dir_ / "whole.trained.rank0"));
}

// A checkpoint written by two processes resumes in one (the checkpoint
// holds every graph, in graph order).
TEST_F(DistributedTrainTest, OneProcessResumesWhatTwoProcessesWrote) {
  std::vector<RankRun> runs = RunSameCommand(2, TrainArgs("p", "2"));
  for (const RankRun& run : runs) ASSERT_EQ(run.exit_code, 0) << run.out;
  std::vector<std::string> args = TrainArgs("p", "4");
  args.push_back("--resume");
  ASSERT_EQ(OneProcess(args, ""), 0);
}

TEST_F(DistributedTrainTest, ResumingWithoutACheckpointIsOneLineOnEveryRank) {
  std::vector<std::string> args = TrainArgs("none");
  args.push_back("--resume");
  std::vector<RankRun> runs = RunSameCommand(2, args);
  for (const RankRun& run : runs) ExpectOneErrorLine(run, "no training checkpoint to resume from");
}

TEST_F(DistributedTrainTest, MoreProcessesThanGraphsIsOneLineOnEveryRank) {
  std::vector<RankRun> runs = RunSameCommand(3, TrainArgs("p"));
  for (const RankRun& run : runs) ExpectOneErrorLine(run, "WORLD_SIZE=3 is more than the 2 graphs");
  EXPECT_FALSE(fs::exists(dir_ / "p"));
}

TEST_F(DistributedTrainTest, RanksWithOtherFlagsAreRefusedOnEveryRank) {
  std::vector<std::string> other = TrainArgs("p");
  other[10] = "4";  // --seed
  const int port = FreePort();
  std::vector<RankRun> runs = RunRanks({TrainArgs("p"), other}, 2, {port, port});
  for (const RankRun& run : runs) ExpectOneErrorLine(run, "rank 1's command line differs from rank 0's");
}

}  // namespace

// compare's methods dealt one a rank: rank 0's table is one process's, in
// the same order, every column but the placers' own seconds.
class DistributedCompareTest : public DistributedTest {
 protected:
  std::vector<std::string> CompareArgs() const {
    return {"compare", "--graph", "tiny", "--cluster", "k80x4", "--seed", "3", "--max-evaluations", "300", "--json",
            "--methods", "single_gpu,expert,m_etf,m_sct,mcmc,random,dp_split"};
  }
  nlohmann::json OneProcessTable() {
    std::string command = std::string("env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT ") + DEVPLACE_BINARY;
    for (const std::string& a : CompareArgs()) command += " '" + a + "'";
    const fs::path out = dir_ / "one.json";
    EXPECT_EQ(std::system((command + " > " + out.string() + " 2> /dev/null").c_str()), 0);
    return WithoutPlacerSeconds(nlohmann::json::parse(ReadAll(out)));
  }
  static nlohmann::json WithoutPlacerSeconds(nlohmann::json table) {
    for (nlohmann::json& row : table) row.erase("placer_seconds");
    return table;
  }
};

TEST_F(DistributedCompareTest, ThreeProcessesPrintOneProcessTable) {
  const nlohmann::json one = OneProcessTable();
  ASSERT_EQ(one.size(), 7u);
  std::vector<RankRun> runs = RunSameCommand(3, CompareArgs());
  for (const RankRun& run : runs) EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(runs[1].out, "");  // workers print nothing
  EXPECT_EQ(runs[2].out, "");
  EXPECT_EQ(WithoutPlacerSeconds(nlohmann::json::parse(runs[0].out)), one) << runs[0].out;
}

TEST_F(DistributedCompareTest, AWorkerKilledMidRunHasItsMethodsRunOnRankZero) {
  const nlohmann::json one = OneProcessTable();
  // Rank 2 (methods 2 and 5: m_etf, random) dies instead of sending its
  // second result.
  std::vector<RankRun> runs = RunSameCommand(3, CompareArgs(), {"DEVPLACE_TEST_KILL_WORKER=2:1"});
  EXPECT_EQ(runs[2].signal, SIGKILL) << runs[2].out;
  EXPECT_EQ(runs[0].exit_code, 0) << runs[0].out;
  EXPECT_EQ(runs[1].exit_code, 0) << runs[1].out;
  const size_t json_start = runs[0].out.find('[');
  ASSERT_NE(json_start, std::string::npos) << runs[0].out;
  EXPECT_NE(runs[0].out.find("dropped rank 2 (no result for random"), std::string::npos) << runs[0].out;
  EXPECT_EQ(WithoutPlacerSeconds(nlohmann::json::parse(runs[0].out.substr(json_start))), one) << runs[0].out;
}
