// How fast the simulator evaluates placements, against one plain topological
// pass over the same graph and placement, measured in the same run.
//
//   build/bench/sim_bench [--benchmark_min_time=1]
//
// Prints Google Benchmark's table, then evaluations per second and the
// simulator / plain-pass time ratio for each graph size.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>

#include "cluster/presets.h"
#include "models/registry.h"
#include "graph/grouping.h"
#include "models/synthetic.h"
#include "sim/simulator.h"
#include "util/random.h"

namespace devplace {
namespace {

struct Setup {
  Graph graph;
  Cluster cluster;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<Simulator> simulator;
  Placement random_placement;    // what an untrained policy samples
  Placement layerwise_placement; // what a good placement looks like
};

// Two placements on the k80x4 machine: each co-location group on a random
// device that can run it (most tensors cross devices, the worst case), and
// contiguous runs of groups per GPU (few crossings, as trained placements).
Setup& SetupFor(int num_ops) {
  static std::map<int, std::unique_ptr<Setup>> cache;
  auto& slot = cache[num_ops];
  if (slot) return *slot;
  slot = std::make_unique<Setup>();
  Setup& s = *slot;
  SyntheticOptions options;
  options.num_ops = num_ops;
  options.width = 8;
  s.graph = MakeSyntheticGraph(options);
  s.cluster = *MakeClusterPreset("k80x4");
  s.cost = std::make_unique<CostModel>(s.cluster);
  s.simulator = std::make_unique<Simulator>(s.graph, s.cluster, *s.cost);
  Grouping grouping = BuildGrouping(s.graph);
  Random random(7);
  std::vector<int32_t> device_of_group(grouping.num_groups());
  for (int32_t g = 0; g < grouping.num_groups(); ++g) {
    do {
      device_of_group[g] = static_cast<int32_t>(random.Below(s.cluster.num_devices()));
    } while (!(grouping.groups[g].device_kinds & MaskOf(s.cluster.devices[device_of_group[g]].kind)));
  }
  s.random_placement = ExpandGroupPlacement(grouping, device_of_group);
  const int32_t num_gpus = s.cluster.num_devices() - 1;
  for (int32_t g = 0; g < grouping.num_groups(); ++g) {
    bool gpu_ok = grouping.groups[g].device_kinds & MaskOf(DeviceKind::kGpu);
    device_of_group[g] = gpu_ok ? 1 + static_cast<int32_t>(int64_t{g} * num_gpus / grouping.num_groups()) : 0;
  }
  s.layerwise_placement = ExpandGroupPlacement(grouping, device_of_group);
  return s;
}

const Placement& PlacementFor(const Setup& s, int64_t kind) {
  return kind == 0 ? s.random_placement : s.layerwise_placement;
}

void BM_Simulate(benchmark::State& state) {
  Setup& s = SetupFor(static_cast<int>(state.range(0)));
  const Placement& placement = PlacementFor(s, state.range(1));
  for (auto _ : state) {
    SimResult r = s.simulator->Run(placement);
    benchmark::DoNotOptimize(r.step_time_us);
  }
  state.counters["ops"] = s.graph.num_ops();
  state.counters["evals_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_PlainPass(benchmark::State& state) {
  Setup& s = SetupFor(static_cast<int>(state.range(0)));
  const Placement& placement = PlacementFor(s, state.range(1));
  for (auto _ : state) benchmark::DoNotOptimize(s.simulator->PlainPassUs(placement));
  state.counters["ops"] = s.graph.num_ops();
}

// Moves of one co-location unit to another device from a fixed placement,
// each evaluated in full (Run) or incrementally (RunChanged from the
// remembered placement). Graph: 0 = the 2017 RNNLM (6,572 ops), else a
// synthetic graph of about that many ops.
struct MoveSetup {
  std::unique_ptr<Setup> owned;  // for the RNNLM
  Setup* s = nullptr;
  std::vector<std::vector<int32_t>> units;
};

MoveSetup& MoveSetupFor(int num_ops) {
  static std::map<int, std::unique_ptr<MoveSetup>> cache;
  auto& slot = cache[num_ops];
  if (slot) return *slot;
  slot = std::make_unique<MoveSetup>();
  MoveSetup& m = *slot;
  if (num_ops == 0) {
    m.owned = std::make_unique<Setup>();
    Setup& s = *m.owned;
    s.graph = MakeModel("rnnlm");
    s.cluster = *MakeClusterPreset("k80x4");
    s.cost = std::make_unique<CostModel>(s.cluster);
    s.simulator = std::make_unique<Simulator>(s.graph, s.cluster, *s.cost);
    Grouping grouping = BuildGrouping(s.graph);
    std::vector<int32_t> device_of_group(grouping.num_groups());
    Random random(7);
    for (int32_t g = 0; g < grouping.num_groups(); ++g) {
      const bool gpu_ok = grouping.groups[g].device_kinds & MaskOf(DeviceKind::kGpu);
      device_of_group[g] = gpu_ok ? 1 + static_cast<int32_t>(int64_t{g} * 4 / grouping.num_groups()) : 0;
    }
    s.layerwise_placement = ExpandGroupPlacement(grouping, device_of_group);
    for (int32_t g = 0; g < grouping.num_groups(); ++g) {
      do {
        device_of_group[g] = static_cast<int32_t>(random.Below(s.cluster.num_devices()));
      } while (!(grouping.groups[g].device_kinds & MaskOf(s.cluster.devices[device_of_group[g]].kind)));
    }
    s.random_placement = ExpandGroupPlacement(grouping, device_of_group);
    m.s = &s;
  } else {
    m.s = &SetupFor(num_ops);
  }
  GroupingOptions options;
  options.merge_single_consumer = false;
  for (const Group& g : BuildGrouping(m.s->graph, options).groups) {
    if (g.device_kinds & MaskOf(DeviceKind::kGpu)) m.units.push_back(g.ops);
  }
  return m;
}

void Move(benchmark::State& state, bool incremental) {
  MoveSetup& m = MoveSetupFor(static_cast<int>(state.range(0)));
  Setup& s = *m.s;
  const Placement& base = PlacementFor(s, state.range(1));
  s.simulator->Remember(base);
  Random random(11);
  Placement next = base;
  int64_t resumed = 0;
  for (auto _ : state) {
    const std::vector<int32_t>& unit = m.units[random.Below(m.units.size())];
    const int32_t to = 1 + static_cast<int32_t>(random.Below(4));  // a GPU
    for (int32_t op : unit) next[op] = to;
    SimResult r = incremental ? s.simulator->RunChanged(next, unit) : s.simulator->Run(next);
    benchmark::DoNotOptimize(r.step_time_us);
    resumed += incremental && s.simulator->last_skipped_fraction() > 0;
    for (int32_t op : unit) next[op] = base[op];
  }
  state.counters["ops"] = s.graph.num_ops();
  state.counters["resumed"] = static_cast<double>(resumed) / std::max<int64_t>(state.iterations(), 1);
}
void BM_MoveFull(benchmark::State& state) { Move(state, false); }
void BM_MoveIncremental(benchmark::State& state) { Move(state, true); }
BENCHMARK(BM_MoveFull)->ArgsProduct({{0, 10000, 100000}, {0, 1}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MoveIncremental)->ArgsProduct({{0, 10000, 100000}, {0, 1}})->Unit(benchmark::kMicrosecond);

// Second argument: 0 = random placement, 1 = layer-wise placement.
BENCHMARK(BM_Simulate)->ArgsProduct({{1000, 10000, 50000}, {0, 1}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlainPass)->ArgsProduct({{1000, 10000, 50000}, {0, 1}})->Unit(benchmark::kMicrosecond);

// Keeps each run's time per iteration so main can print the ratios.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Iteration && !run.error_occurred) seconds_[run.benchmark_name()] = run.GetAdjustedRealTime() * 1e-6;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void PrintMoves() const {
    std::printf("\n%-14s %-10s %16s %16s %9s\n", "graph", "placement", "full us/move", "incremental us", "speed-up");
    for (int n : {0, 10000, 100000}) {
      for (int kind : {0, 1}) {
        std::string suffix = "/" + std::to_string(n) + "/" + std::to_string(kind);
        auto full = seconds_.find("BM_MoveFull" + suffix);
        auto inc = seconds_.find("BM_MoveIncremental" + suffix);
        if (full == seconds_.end() || inc == seconds_.end()) continue;
        const std::string graph = n == 0 ? "rnnlm" : "synthetic " + std::to_string(MoveSetupFor(n).s->graph.num_ops());
        std::printf("%-14s %-10s %16.1f %16.1f %8.2fx\n", graph.c_str(), kind == 0 ? "random" : "layerwise", full->second * 1e6,
                    inc->second * 1e6, full->second / inc->second);
      }
    }
  }
  void PrintRatios() const {
    std::printf("\n%-8s %-10s %12s %16s %12s\n", "ops", "placement", "evals/s", "sim/plain ratio", "us/eval");
    for (int n : {1000, 10000, 50000}) {
      for (int kind : {0, 1}) {
        std::string suffix = "/" + std::to_string(n) + "/" + std::to_string(kind);
        auto sim = seconds_.find("BM_Simulate" + suffix);
        auto plain = seconds_.find("BM_PlainPass" + suffix);
        if (sim == seconds_.end() || plain == seconds_.end()) continue;
        std::printf("%-8d %-10s %12.0f %16.2f %12.1f\n", SetupFor(n).graph.num_ops(), kind == 0 ? "random" : "layerwise",
                    1.0 / sim->second, sim->second / plain->second, sim->second * 1e6);
      }
    }
  }

 private:
  std::map<std::string, double> seconds_;
};

}  // namespace
}  // namespace devplace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  devplace::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  reporter.PrintMoves();
  benchmark::Shutdown();
  return 0;
}
