// The C++ batch API's evaluations a second (SimulatedEnvironment::Measure
// over worker threads, nothing remembered) on placements a caller wrote,
// so that bench/python_bench.py compares Python's Simulator.run_batch with
// it on the same placements in one run (BENCHMARKS.md, "From Python").
//
//   build/bench/batch_bench OPS WIDTH HIDDEN CLUSTER PLACEMENTS ROWS WORKERS REPEAT
//
// PLACEMENTS: ROWS x (the synthetic graph's ops; HIDDEN its --hidden) int32 device indices, raw.
// Prints one JSON object: evaluations_per_s, seconds, sum_step_time_s (of
// the placements that ran, in order, 0 for the others).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli/inputs.h"
#include "cluster/cluster_json.h"
#include "models/registry.h"
#include "sim/environment.h"
#include "util/error.h"

int main(int argc, char** argv) {
  using namespace devplace;
  if (argc != 9) {
    std::fprintf(stderr, "usage: batch_bench OPS WIDTH HIDDEN CLUSTER PLACEMENTS ROWS WORKERS REPEAT\n");
    return 2;
  }
  try {
    const Graph graph = MakeModel("synthetic", {{"ops", std::stoll(argv[1])}, {"width", std::stoll(argv[2])}, {"hidden", std::stoll(argv[3])}});
    const Cluster cluster = ResolveCluster(argv[4]);
    const CostModel cost = MakeCostModel(cluster, graph, OpTimesFlags{});
    const int64_t rows = std::stoll(argv[6]);
    const int32_t workers = std::stoi(argv[7]);
    const int64_t repeat = std::stoll(argv[8]);
    std::ifstream in(argv[5], std::ios::binary);
    std::vector<Placement> placements(rows, Placement(graph.num_ops()));
    for (Placement& p : placements) in.read(reinterpret_cast<char*>(p.data()), static_cast<std::streamsize>(p.size() * sizeof(int32_t)));
    if (!in) throw Error(std::string(argv[5]) + ": shorter than " + std::to_string(rows) + " placements of " + std::to_string(graph.num_ops()) + " ops");
    SimulatedEnvironmentOptions options;
    options.workers = workers;
    options.cache_bytes = 0;  // every placement simulated, as run_batch does
    SimulatedEnvironment environment(graph, cluster, cost, options);
    double sum = 0;  // of the first batch's step times, in order
    const auto start = std::chrono::steady_clock::now();
    for (int64_t r = 0; r < repeat; ++r) {
      const std::vector<Outcome> outcomes = environment.Measure(placements, r, 0);
      if (r == 0) {
        for (const Outcome& o : outcomes) sum += o.ok ? o.step_time_s : 0;
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("{\"evaluations_per_s\": %.6g, \"seconds\": %.6g, \"sum_step_time_s\": %.17g}\n",
                static_cast<double>(rows * repeat) / seconds, seconds, sum);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "batch_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
