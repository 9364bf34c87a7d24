// Where the time and memory of one large graph go: loading the file,
// building the simulator, and for each named placer its placement and one
// simulated evaluation of it (twice: the first run sizes the simulator's
// buffers). For BENCHMARKS.md's "A million ops".
//
//   build/bench/scale_bench GRAPH CLUSTER [PLACER ...]     (default: single_gpu random)
//
// Prints one line per phase: wall seconds, resident memory after it and the
// peak so far (VmRSS, VmHWM of /proc/self/status).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cluster/cluster_json.h"
#include "graph/graph_json.h"
#include "placers/placer.h"
#include "util/error.h"

namespace devplace {
namespace {

// A field of /proc/self/status in MiB ("VmRSS", "VmHWM"); 0 if absent.
double StatusMib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024;  // kB
  }
  return 0;
}

class Phases {
 public:
  void Lap(const std::string& what) {
    const auto now = std::chrono::steady_clock::now();
    std::printf("%-28s %9.3f s  rss %8.0f MiB  peak %8.0f MiB\n", what.c_str(),
                std::chrono::duration<double>(now - last_).count(), StatusMib("VmRSS"), StatusMib("VmHWM"));
    std::fflush(stdout);
    last_ = std::chrono::steady_clock::now();  // printing is not the next phase's
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

int Run(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: scale_bench GRAPH CLUSTER [PLACER ...]\n");
    return 2;
  }
  std::vector<std::string> placers(argv + 3, argv + argc);
  if (placers.empty()) placers = {"single_gpu", "random"};
  Phases phases;
  const Graph graph = LoadGraphFile(argv[1]);
  phases.Lap("load (" + std::to_string(graph.num_ops()) + " ops)");
  const Cluster cluster = ResolveCluster(argv[2]);
  const CostModel cost(cluster);
  Simulator simulator(graph, cluster, cost);
  phases.Lap("simulator");
  PlacementProblem problem{graph, cluster, cost, simulator, /*seed=*/1};
  for (const std::string& name : placers) {
    const PlacerOutput output = FindPlacer(name).place(problem);
    phases.Lap(name + ": place");
    for (int run = 1; run <= 2; ++run) {
      const SimResult result = simulator.Run(output.placement);
      phases.Lap(name + ": simulate #" + std::to_string(run));
      if (run == 2) {
        std::printf("%-28s step %.6f s%s\n", name.c_str(), result.step_time_s(),
                    result.invalid ? " (invalid)" : result.oom ? " (out of memory)" : "");
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace devplace

int main(int argc, char** argv) {
  try {
    return devplace::Run(argc, argv);
  } catch (const devplace::Error& e) {
    std::fprintf(stderr, "scale_bench: error: %s\n", e.what());
    return 1;
  }
}
