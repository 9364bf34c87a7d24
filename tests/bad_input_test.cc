// The bad-input corpus (tests/bad_inputs/cases.txt): every case runs the
// devplace program on a malformed or extreme input and checks that it is
// refused the way README promises: a non-zero exit (not a signal), exactly
// one line on stderr starting "devplace: error:" and naming the input, no
// file left behind, and an end within a time limit (a hang is killed and
// fails the case rather than hanging ctest). Cases marked "(exit 0)" are odd
// but valid inputs that once crashed: they must succeed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "test_files.h"

namespace {

namespace fs = std::filesystem;
using devplace::testing::ReadFile;
using devplace::testing::Split;

// Far above what any refusal needs (well under a second unsanitized), so
// that only a hang or a runaway reaches it; sanitizers make runs slower.
constexpr int kTimeLimitS = 60;
// An error line longer than this echoed something whole that it should have
// cut (an 8 MiB name, a path longer than PATH_MAX).
constexpr size_t kMaxErrorLineBytes = 4096;
// Address space a run may take, so that an input read without bound (such
// as /dev/zero) fails the case instead of exhausting a shared machine. Under
// AddressSanitizer, whose shadow memory needs terabytes of address space,
// its hard_rss_limit_mb does the same job.
constexpr rlim_t kAddressSpaceBytes = rlim_t{8} << 30;
constexpr const char* kSanitizerRssLimit = "hard_rss_limit_mb=4096";
// The expected text of a case whose input is odd but valid (cases.txt).
const std::string kAccepted = "(exit 0)";

struct Case {
  std::string name;
  std::string expected;           // text the error line must contain
  std::vector<std::string> args;  // with placeholders
  std::string manifest_error;     // set when the manifest line is malformed
};

// What gtest prints for a case: its name, not its bytes.
void PrintTo(const Case& c, std::ostream* out) { *out << c.name; }

std::string Trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

bool IsTestName(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Reads the manifest; a malformed line becomes a case that fails saying so,
// so a typo in the corpus cannot silently drop a case.
std::vector<Case> LoadCases() {
  std::vector<Case> cases;
  std::ifstream in(DEVPLACE_BAD_INPUTS "/cases.txt");
  if (!in) {
    cases.push_back({"manifest_missing", "", {}, "cannot open " DEVPLACE_BAD_INPUTS "/cases.txt"});
    return cases;
  }
  std::string line;
  std::set<std::string> names;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    const std::vector<std::string> fields = Split(trimmed, '|');
    Case c;
    c.name = fields.empty() ? "" : Trim(fields[0]);
    if (fields.size() != 3 || !IsTestName(c.name) || !names.insert(c.name).second) {
      c.manifest_error = "cases.txt line " + std::to_string(number) + ": want 'NAME | EXPECTED | ARGS' with a new name";
      c.name = "manifest_line_" + std::to_string(number);
      cases.push_back(c);
      continue;
    }
    c.expected = Trim(fields[1]);
    for (const std::string& arg : Split(Trim(fields[2]), ' ')) {
      if (!arg.empty()) c.args.push_back(arg);
    }
    cases.push_back(c);
  }
  return cases;
}

std::string WriteFile(const fs::path& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary) << contents;
  return path.string();
}

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Inputs the corpus cannot hold as files: too big to commit, or paths that
// depend on where the case runs. Returns the argument to substitute.
std::string Generate(const std::string& what, const fs::path& work) {
  constexpr int kDepth = 100000;  // the issue's example: 100k nested arrays in a field
  if (what == "deep_graph.json") {
    return WriteFile(work / what, R"({"format": "devplace-graph", "version": 1, "ops": [{"id": 0, "name": "a", "type": "X",
      "outputs": [{"shape": )" + Nested(kDepth) + "}]}]}");
  }
  if (what == "deep_cluster.json") {
    return WriteFile(work / what, R"({"version": 1, "name": )" + Nested(kDepth) + R"(, "devices": []})");
  }
  if (what == "deep_placement.json") {
    return WriteFile(work / what, R"({"placement": {"input/batch": )" + Nested(kDepth) + "}}");
  }
  if (what == "deep_op_times.json") {
    return WriteFile(work / what, R"({"times": [{"op_type": )" + Nested(kDepth) +
                                      R"(, "shape": [64, 1024], "device_kind": "gpu", "time_us": 1}]})");
  }
  if (what == "big_name_graph.json") {
    // Two ops with the same 8 MiB name full of newlines: the duplicate is
    // an error that names it.
    std::string name;
    while (name.size() < (size_t{8} << 20)) name += std::string(1022, 'x') + "\\n";
    const std::string op = R"({"id": ID, "name": ")" + name + R"(", "type": "X", "outputs": [{"shape": [1]}]})";
    std::string first = op, second = op;
    first.replace(first.find("ID"), 2, "0");
    second.replace(second.find("ID"), 2, "1");
    return WriteFile(work / what, R"({"format": "devplace-graph", "version": 1, "ops": [)" + first + ", " + second + "]}");
  }
  if (what == "long_path" || what.rfind("long_path/", 0) == 0) {
    // Longer than PATH_MAX (4096), in components a file system accepts;
    // long_path/NAME ends in NAME, which the error must still show.
    std::string path = work.string();
    while (path.size() <= 5000) path += "/" + std::string(200, 'a');
    return path + "/" + (what == "long_path" ? std::string("graph.json") : what.substr(std::string("long_path/").size()));
  }
  if (what == "existing_file") return WriteFile(work / what, "a file where a folder is wanted\n");
  if (what == "host_cluster.json" || what == "host_cluster_gpu63.json") {
    // This machine as `clusters --detect` writes it, without measuring: one
    // CPU device owning the first core this process may use (and for the
    // second, a GPU at a CUDA index no machine has).
    cpu_set_t set;
    CPU_ZERO(&set);
    int core = 0;
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
      while (core < CPU_SETSIZE - 1 && !CPU_ISSET(core, &set)) ++core;
    }
    std::string devices = R"({"name": "cpu:0", "kind": "cpu", "peak_tflops": 0.1, "memory_bandwidth_gb_per_s": 10,
        "memory_gib": 4, "cores": [)" + std::to_string(core) + "]}";
    std::string links;
    if (what == "host_cluster_gpu63.json") {
      devices += R"(, {"name": "gpu:0", "kind": "gpu", "peak_tflops": 10, "memory_bandwidth_gb_per_s": 500,
          "memory_gib": 16, "cuda_index": 63})";
      links = R"({"between": ["cpu:0", "gpu:0"], "bandwidth_gb_per_s": 12, "latency_us": 10})";
    }
    return WriteFile(work / what, R"({"format": "devplace-cluster", "version": 1, "name": "host", "devices": [)" +
                                      devices + R"(], "links": [)" + links + "]}");
  }
  ADD_FAILURE() << "cases.txt names an unknown generated input {gen:" << what << "}";
  return what;
}

std::string Substitute(std::string arg, const fs::path& work) {
  const auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = arg.find(from); at != std::string::npos; at = arg.find(from, at + to.size())) arg.replace(at, from.size(), to);
  };
  replace_all("{dir}", DEVPLACE_BAD_INPUTS);
  replace_all("{out}", (work / "out").string());
  const size_t gen = arg.find("{gen:");
  if (gen != std::string::npos) {
    const size_t end = arg.find('}', gen);
    const std::string what = arg.substr(gen + 5, end - gen - 5);
    arg.replace(gen, end - gen + 1, Generate(what, work));
  }
  return arg;
}

std::set<std::string> ListTree(const fs::path& root) {
  std::set<std::string> paths;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(root, error); !error && it != fs::recursive_directory_iterator();
       it.increment(error)) {
    paths.insert(fs::relative(it->path(), root).string());
  }
  return paths;
}

bool Sanitized() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
  return false;
}

struct ChildEnd {
  bool timed_out = false;
  int status = 0;  // from waitpid
};

// Runs argv in `work` with stdout and stderr to files; kills the whole
// process group if it has not ended after kTimeLimitS.
ChildEnd RunWithLimit(const std::vector<std::string>& argv, const fs::path& work, const fs::path& out_file,
                 const fs::path& err_file) {
  std::vector<char*> c_argv;
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  std::string asan = std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "";
  asan += std::string(asan.empty() ? "" : ":") + kSanitizerRssLimit;
  const bool sanitized = Sanitized();

  const pid_t child = ::fork();
  if (child == 0) {
    ::setpgid(0, 0);
    if (::chdir(work.c_str()) != 0) ::_exit(126);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    if (!sanitized) {
      const rlimit memory{kAddressSpaceBytes, kAddressSpaceBytes};
      ::setrlimit(RLIMIT_AS, &memory);
    }
    ::setenv("ASAN_OPTIONS", asan.c_str(), 1);
    ::execv(c_argv[0], c_argv.data());
    ::_exit(127);
  }
  ChildEnd run;
  if (child < 0) {
    ADD_FAILURE() << "fork failed: " << std::strerror(errno);
    return run;
  }
  ::setpgid(child, child);  // also here, so the kill below cannot race the child's own call
  // A pidfd becomes readable when the child ends, so poll() waits for the
  // end or the time limit, whichever comes first, without polling in a loop.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  EXPECT_GE(pidfd, 0) << "pidfd_open: " << std::strerror(errno);
  if (pidfd >= 0) {
    pollfd wait_for{pidfd, POLLIN, 0};
    int ready;
    do {
      ready = ::poll(&wait_for, 1, kTimeLimitS * 1000);
    } while (ready < 0 && errno == EINTR);
    ::close(pidfd);
    if (ready == 0) {
      run.timed_out = true;
      ::kill(-child, SIGKILL);
    }
  }
  while (::waitpid(child, &run.status, 0) < 0 && errno == EINTR) {
  }
  return run;
}

std::string Describe(const std::vector<std::string>& args) {
  std::string text = "devplace";
  for (const std::string& arg : args) text += " " + (arg.size() > 200 ? arg.substr(0, 200) + "..." : arg);
  return text;
}

class BadInputTest : public ::testing::TestWithParam<Case> {};

TEST_P(BadInputTest, RefusedWithOneLine) {
  const Case& c = GetParam();
  ASSERT_TRUE(c.manifest_error.empty()) << c.manifest_error;

  std::string root_template = (fs::path(::testing::TempDir()) / "bad_input_XXXXXX").string();
  ASSERT_NE(::mkdtemp(root_template.data()), nullptr) << std::strerror(errno);
  const fs::path root = root_template;
  const fs::path work = root / "work";
  fs::create_directory(work);

  std::vector<std::string> argv = {DEVPLACE_BINARY};
  for (const std::string& arg : c.args) argv.push_back(Substitute(arg, work));
  const std::set<std::string> inputs = ListTree(work);
  const std::string command = Describe(argv);

  const ChildEnd run = RunWithLimit(argv, work, root / "stdout", root / "stderr");
  const std::string err = ReadFile((root / "stderr").string());
  const std::string err_head = err.substr(0, 2000);

  EXPECT_FALSE(run.timed_out) << command << "\nkilled after " << kTimeLimitS << " s; stderr so far:\n" << err_head;
  if (!run.timed_out && c.expected == kAccepted) {
    // An odd but valid input: it must work, with at most a warning line.
    EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << command << "\nfailed:\n" << err_head;
    EXPECT_LE(std::count(err.begin(), err.end(), '\n'), 1) << command << "\nstderr is not one line:\n" << err_head;
  } else if (!run.timed_out) {
    EXPECT_FALSE(WIFSIGNALED(run.status)) << command << "\nkilled by signal " << WTERMSIG(run.status) << "\n" << err_head;
    EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) != 0) << command << "\nexited 0\n" << err_head;
    EXPECT_EQ(err.rfind("devplace: error: ", 0), 0u) << command << "\n" << err_head;
    EXPECT_TRUE(!err.empty() && err.back() == '\n' && std::count(err.begin(), err.end(), '\n') == 1)
        << command << "\nstderr is not one line:\n" << err_head;
    EXPECT_LE(err.size(), kMaxErrorLineBytes) << command << "\nerror line of " << err.size() << " bytes:\n" << err_head;
    EXPECT_NE(err.find(c.expected), std::string::npos) << command << "\nerror does not mention '" << c.expected << "':\n" << err_head;
  }
  std::vector<std::string> left;
  for (const std::string& path : ListTree(work)) {
    // An accepted input may write its output, but no temporary file.
    const bool allowed = c.expected == kAccepted && path.find(".tmp") == std::string::npos;
    if (!inputs.count(path) && !allowed) left.push_back(path);
  }
  EXPECT_TRUE(left.empty()) << command << "\nleft behind: " << ::testing::PrintToString(left);
  std::error_code ignored;
  fs::remove_all(root, ignored);
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadInputTest, ::testing::ValuesIn(LoadCases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
