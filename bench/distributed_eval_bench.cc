// Simulated evaluations a second across processes against one process with
// threads (issue 51, BENCHMARKS.md "Across processes"): fixed batches of
// placements measured by DistributedEnvironment::Measure directly, not
// through a policy, so the number is the evaluations' and the transport's.
//
//   distributed_eval_bench GRAPH CLUSTER [--batches 6] [--samples 16] [--threads 1] [--seed 1]
//
// Without WORLD_SIZE (or WORLD_SIZE=1): one process measures every batch in
// a SimulatedEnvironment with --threads threads. Under
// scripts/launch_local.sh N: rank 0 measures the batches through a
// DistributedEnvironment over the other N-1 ranks (one thread each), then
// measures, alone, the largest slice it would ideally wait for (ceil(K/N)
// placements a batch); the difference, divided by the placements that
// travelled, is the wall overhead per evaluation. Every rank also counts
// its CPU seconds (a worker's include building its simulator), which other
// programs' load moves less than wall time: CPU per evaluation across
// processes minus one thread's is the transport's CPU cost. Prints one line:
//   mode=threads|processes n=N evals_per_s=... cpu_us_per_eval=...
//   [ideal_evals_per_s=... wall_overhead_us_per_eval=...]
// Each batch has fresh placements and the environment remembers nothing,
// so every placement is simulated.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cluster/cluster_json.h"
#include "exec/distributed/evaluation.h"
#include "exec/distributed/world.h"
#include "graph/graph_json.h"
#include "placers/methods.h"
#include "placers/placer.h"
#include "sim/environment.h"
#include "util/error.h"

namespace devplace {
namespace {

using Clock = std::chrono::steady_clock;

int64_t Flag(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 3; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoll(argv[i + 1]);
  }
  return fallback;
}

// Batch b's placements: the random baseline's (each co-location group on a
// random device it can run on), seeded by (seed, b, k), so every rank count
// sees the same work.
std::vector<std::vector<Placement>> Batches(const PlacementProblem& problem, int64_t batches, int64_t samples,
                                            uint64_t seed) {
  std::vector<std::vector<Placement>> all(static_cast<size_t>(batches));
  PlacementProblem drawn = problem;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t k = 0; k < samples; ++k) {
      drawn.seed = seed * 1000003 + static_cast<uint64_t>(b * samples + k);
      all[static_cast<size_t>(b)].push_back(PlaceRandom(drawn).placement);
    }
  }
  return all;
}

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// This process's CPU seconds, every thread (the store's server thread on
// rank 0 included): less moved by other programs' load than wall time.
double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

int Run(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: distributed_eval_bench GRAPH CLUSTER [--batches 6] [--samples 16] [--threads 1] [--seed 1]\n");
    return 2;
  }
  const Graph graph = LoadGraphFile(argv[1]);
  const Cluster cluster = ResolveCluster(argv[2]);
  const CostModel cost(cluster);
  const int64_t batches = Flag(argc, argv, "--batches", 6);
  const int64_t samples = Flag(argc, argv, "--samples", 16);
  SimulatedEnvironmentOptions options;
  options.workers = static_cast<int32_t>(Flag(argc, argv, "--threads", 1));
  options.cache_bytes = 0;
  Simulator simulator(graph, cluster, cost);
  const PlacementProblem problem{graph, cluster, cost, simulator, 0};
  const auto placements = Batches(problem, batches, samples, static_cast<uint64_t>(Flag(argc, argv, "--seed", 1)));
  const double evaluations = static_cast<double>(batches * samples);

  std::optional<WorldSpec> spec = WorldSpecFromEnvironment();
  if (!spec || spec->size == 1) {
    SimulatedEnvironment environment(graph, cluster, cost, options);
    int64_t ran = 0;
    const double cpu_start = CpuSeconds();
    const auto start = Clock::now();
    for (int64_t b = 0; b < batches; ++b) {
      for (const Outcome& o : environment.Measure(placements[static_cast<size_t>(b)], b, 0)) ran += o.ok ? 1 : 0;
    }
    const double s = Seconds(start);
    std::printf("mode=threads n=%d evals_per_s=%.2f cpu_us_per_eval=%.0f ran=%lld/%lld\n", options.workers, evaluations / s,
                (CpuSeconds() - cpu_start) / evaluations * 1e6, static_cast<long long>(ran), static_cast<long long>(batches * samples));
    return 0;
  }
  std::unique_ptr<World> world = World::Join(*spec, {ProgramFact(), {"graph", argv[1]}, {"cluster", argv[2]}});
  if (world->rank() != 0) {
    const double cpu_start = CpuSeconds();
    ServeEvaluations(*world, graph, cluster, cost);
    world->Put("bench/cpu/" + std::to_string(world->rank()), std::to_string(CpuSeconds() - cpu_start));
    return 0;
  }
  double distributed_s = 0, ideal_s = 0, cpu_s = CpuSeconds();
  {
    EvaluationPool pool(*world);
    DistributedEnvironment environment(pool, graph, cluster, cost, options);
    const auto start = Clock::now();
    for (int64_t b = 0; b < batches; ++b) environment.Measure(placements[static_cast<size_t>(b)], b, 0);
    distributed_s = Seconds(start);
    if (pool.dropped_workers() > 0) throw Error("a worker was dropped: the numbers would not be the transport's");
  }
  cpu_s = CpuSeconds() - cpu_s;
  for (int32_t r = 1; r < world->size(); ++r) {
    std::optional<std::string> theirs = world->Take("bench/cpu/" + std::to_string(r), world->timeout_s());
    if (!theirs) throw Error("rank " + std::to_string(r) + " sent no CPU time");
    cpu_s += std::stod(*theirs);
  }
  // What rank 0 would wait for with free transport: the largest slice.
  const size_t largest = static_cast<size_t>((samples + world->size() - 1) / world->size());
  SimulatedEnvironment local(graph, cluster, cost, options);
  const auto start = Clock::now();
  for (int64_t b = 0; b < batches; ++b) {
    const auto& batch = placements[static_cast<size_t>(b)];
    local.MeasureSlice(std::vector<Placement>(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(largest)), b, 0, 0);
  }
  ideal_s = Seconds(start);
  const double travelled = static_cast<double>(batches) * static_cast<double>(samples - samples / world->size());
  std::printf("mode=processes n=%d evals_per_s=%.2f cpu_us_per_eval=%.0f ideal_evals_per_s=%.2f wall_overhead_us_per_eval=%.0f\n",
              world->size(), evaluations / distributed_s, cpu_s / evaluations * 1e6, evaluations / ideal_s,
              (distributed_s - ideal_s) / travelled * 1e6);
  return 0;
}

}  // namespace
}  // namespace devplace

int main(int argc, char** argv) {
  try {
    return devplace::Run(argc, argv);
  } catch (const devplace::Error& e) {
    std::fprintf(stderr, "distributed_eval_bench: error: %s\n", e.what());
    return 1;
  }
}
