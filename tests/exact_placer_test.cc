#include "placers/exact_placer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "placement_problem.h"
#include "placers/methods.h"
#include "placers/placer.h"
#include "test_util.h"
#include "util/error.h"
#include "util/random.h"

namespace devplace {
namespace {

using testing::MakeDevice;
using testing::MakeOp;
using testing::OwnedProblem;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A random DAG of `num_ops` ops: compute from 1 us to 1 ms on a GPU,
// outputs from 1 KB to 10 MB (1 us to 10 ms on the test links), some
// parameters (some read as views of them), some CPU-only ops, some
// co-location groups, and a control edge now and then.
Graph RandomDag(uint64_t seed, int num_ops) {
  Random random(seed);
  Graph g;
  Op previous;
  for (int i = 0; i < num_ops; ++i) {
    const double flops = 1e6 * std::pow(10.0, 3 * random.Uniform());
    const int64_t output_bytes = 4 * static_cast<int64_t>(250 * std::pow(10.0, 4 * random.Uniform()));
    Op op = MakeOp(i, "op" + std::to_string(i), flops, output_bytes);
    if (random.Below(3) == 0) {
      op.persistent_bytes = static_cast<int64_t>(1e6 * std::pow(10.0, 1.5 * random.Uniform()));
      if (random.Below(2) == 0) {  // a variable's value: a view of its parameters
        op.outputs[0].aliases_persistent = true;
        op.persistent_bytes = std::max(op.persistent_bytes, output_bytes);
      }
    }
    if (random.Below(8) == 0) op.device_kinds = MaskOf(DeviceKind::kCpu);
    if (i > 0 && random.Below(6) == 0 && !previous.colocation_group.empty()) {
      // Co-located with a group begun before: its ops share a device kind.
      op.colocation_group = previous.colocation_group;
      op.device_kinds = previous.device_kinds;
    } else if (random.Below(4) == 0) {
      op.colocation_group = "group" + std::to_string(i);
    }
    previous = op;
    const int32_t index = g.AddOp(op);
    int inputs = 0;
    for (int j = index - 1; j >= 0 && inputs < 2; --j) {
      if (random.Below(3) == 0) {
        g.AddDataEdge(j, 0, index);
        ++inputs;
      }
    }
    if (index >= 2 && random.Below(6) == 0) g.AddControlEdge(static_cast<int32_t>(random.Below(index - 1)), index);
  }
  g.Finalize("random dag " + std::to_string(seed));
  return g;
}

// cpu:0, gpu:0 and gpu:1 all linked pairwise, the GPUs of different memory
// (so not interchangeable) and the CPU running two ops at once.
Cluster UnevenCluster() {
  Cluster c;
  c.name = "uneven";
  c.devices = {MakeDevice("cpu:0", DeviceKind::kCpu), MakeDevice("gpu:0", DeviceKind::kGpu, 30'000'000),
               MakeDevice("gpu:1", DeviceKind::kGpu, 60'000'000)};
  c.devices[0].peak_flops_per_s = 2e11;
  c.devices[0].parallel_ops = 2;
  c.links = {{0, 1, 1e9, 5, -1}, {0, 2, 2e9, 5, -1}, {1, 2, 4e9, 1, -1}};
  c.Finalize("uneven cluster");
  return c;
}

// A CPU and one GPU too small for much.
Cluster TwoDeviceCluster() {
  Cluster c;
  c.name = "two";
  c.devices = {MakeDevice("cpu:0", DeviceKind::kCpu), MakeDevice("gpu:0", DeviceKind::kGpu, 20'000'000)};
  c.devices[0].peak_flops_per_s = 1e11;
  c.links = {{0, 1, 1e9, 2, -1}};
  c.Finalize("two-device cluster");
  return c;
}

// The clusters the brute-force comparison runs on: symmetric GPUs with and
// without a shared bus, memory-limited symmetric GPUs, uneven devices, and
// two devices.
std::vector<std::pair<std::string, Cluster>> TestClusters() {
  return {{"test", testing::MakeTestCluster()},
          {"bus", testing::MakeTestCluster(/*shared_bus=*/true, /*peer_link=*/false)},
          {"slowcpu", testing::MakeSlowCpuCluster(40'000'000)},
          {"uneven", UnevenCluster()},
          {"two", TwoDeviceCluster()}};
}

// Every way of putting each co-location unit on a device, simulated: the
// best valid step time, and how many placements ran without error.
struct BruteForce {
  double best_step_time_us = kInfinity;
  int64_t valid = 0;
  int64_t out_of_memory = 0;
};

BruteForce SolveByBruteForce(OwnedProblem& p) {
  const Grouping units = ConstraintGroups(p.graph);
  const int32_t D = p.cluster.num_devices();
  std::vector<int32_t> device_of_unit(units.num_groups(), 0);
  BruteForce result;
  while (true) {
    const SimResult r = p.simulator.Run(ExpandGroupPlacement(units, device_of_unit));
    if (r.ok()) {
      ++result.valid;
      result.best_step_time_us = std::min(result.best_step_time_us, r.step_time_us);
    } else if (r.oom && !r.invalid) {
      ++result.out_of_memory;
    }
    int32_t u = 0;
    while (u < units.num_groups() && ++device_of_unit[u] == D) device_of_unit[u++] = 0;
    if (u == units.num_groups()) break;
  }
  return result;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

PlacerOutput RunExact(OwnedProblem& p, SearchBudget budget = {}) {
  PlacementProblem problem = p.get();
  problem.budget = budget;
  return FindPlacer("exact").place(problem);
}

TEST(ExactPlacerTest, MatchesBruteForceOnSmallRandomGraphs) {
  int64_t cases_with_oom = 0, cases_where_search_beat_seeds = 0;
  for (auto& [cluster_name, cluster] : TestClusters()) {
    for (uint64_t seed = 1; seed <= 16; ++seed) {
      const int num_ops = 5 + static_cast<int>(seed % 5);  // 5..9
      OwnedProblem p(RandomDag(seed * 7919 + num_ops, num_ops), cluster);
      SCOPED_TRACE(cluster_name + ", seed " + std::to_string(seed));
      const BruteForce brute = SolveByBruteForce(p);
      ASSERT_GT(brute.valid, 0);
      cases_with_oom += brute.out_of_memory > 0;

      const PlacerOutput out = RunExact(p);
      EXPECT_TRUE(Contains(out.note, "proven optimal")) << out.note;
      ASSERT_EQ(CheckPlacement(p.graph, p.cluster, out.placement), std::nullopt);
      const SimResult r = p.simulator.Run(out.placement);
      ASSERT_TRUE(r.ok()) << r.reason;
      EXPECT_EQ(r.step_time_us, brute.best_step_time_us);
      EXPECT_GT(out.evaluations, 0);

      // How the one-shot placers alone do, to be sure the search matters.
      double seed_best_us = kInfinity;
      for (const char* method : {"single_gpu", "m_etf", "m_sct"}) {
        PlacementProblem problem = p.get();
        const SimResult s = p.simulator.Run(FindPlacer(method).place(problem).placement);
        if (s.ok()) seed_best_us = std::min(seed_best_us, s.step_time_us);
      }
      cases_where_search_beat_seeds += brute.best_step_time_us < seed_best_us;
    }
  }
  // The cases cover memory limits and placements the seeds miss.
  EXPECT_GE(cases_with_oom, 5);
  EXPECT_GE(cases_where_search_beat_seeds, 10);
}

TEST(ExactPlacerTest, SaysWhenNoPlacementFitsInMemory) {
  Graph g;
  Op big = MakeOp(0, "big", 1e6, 4000);
  big.persistent_bytes = 50'000'000;  // more than any device of the cluster holds
  g.AddOp(big);
  g.AddOp(MakeOp(1, "next", 1e6, 4000));
  g.AddDataEdge(0, 0, 1);
  g.Finalize("too big");
  Cluster c = TwoDeviceCluster();
  c.devices[0].memory_bytes = 20'000'000;
  OwnedProblem p(std::move(g), c);
  const PlacerOutput out = RunExact(p);
  EXPECT_TRUE(Contains(out.note, "every placement runs out of memory")) << out.note;
  EXPECT_EQ(CheckPlacement(p.graph, p.cluster, out.placement), std::nullopt);
}

// The fastest placement, both chains on the GPU, runs out of memory in a way
// the memory check cannot foresee (a's output is still held when b and
// then c allocate theirs): the simulator must catch it, and exact must not
// return it.
TEST(ExactPlacerTest, NeverReturnsAPlacementThatRunsOutOfMemory) {
  Graph g;
  for (const char* name : {"a", "b", "c", "d"}) g.AddOp(MakeOp(g.num_ops(), name, 1e8, 8'000'000));
  g.AddDataEdge(0, 0, 2);
  g.AddDataEdge(1, 0, 3);
  g.Finalize("two chains");
  OwnedProblem p(std::move(g), TwoDeviceCluster());  // gpu:0 holds 20 MB
  const Placement all_on_gpu(4, 1);
  const SimResult gpu = p.simulator.Run(all_on_gpu);
  ASSERT_TRUE(gpu.oom);
  exact::PartialBound bound(p.graph, p.cluster, p.cost, ConstraintGroups(p.graph));
  ASSERT_FALSE(bound.MustRunOutOfMemory(all_on_gpu));  // one op per unit: the same vector

  const PlacerOutput out = RunExact(p);
  EXPECT_TRUE(Contains(out.note, "proven optimal")) << out.note;
  const SimResult r = p.simulator.Run(out.placement);
  EXPECT_TRUE(r.ok()) << r.reason;
  EXPECT_GT(r.step_time_us, gpu.step_time_us);
  EXPECT_EQ(r.step_time_us, SolveByBruteForce(p).best_step_time_us);
}

// A graph whose search takes a good number of evaluations.
Graph WideGraph() { return RandomDag(4242, 11); }

TEST(ExactPlacerTest, BudgetRunsOutWithAValidPlacementNotProven) {
  OwnedProblem p(WideGraph(), UnevenCluster());
  const PlacerOutput full = RunExact(p);
  ASSERT_TRUE(Contains(full.note, "proven optimal")) << full.note;
  ASSERT_GT(full.evaluations, 20);  // else the budget below would not bite

  const PlacerOutput out = RunExact(p, SearchBudget{.max_evaluations = 10});
  EXPECT_TRUE(Contains(out.note, "budget ran out")) << out.note;
  EXPECT_TRUE(Contains(out.note, "not proven optimal")) << out.note;
  EXPECT_LE(out.evaluations, 10);
  ASSERT_EQ(CheckPlacement(p.graph, p.cluster, out.placement), std::nullopt);
  const SimResult r = p.simulator.Run(out.placement);
  EXPECT_TRUE(r.ok()) << r.reason;
  EXPECT_GE(r.step_time_us, p.simulator.Run(full.placement).step_time_us);
}

TEST(ExactPlacerTest, GraphAboveTheUnitCapReturnsTheBestOneShotPlacement) {
  // A graph where m_topo beats the few placers that seed the search.
  OwnedProblem p(RandomDag(4, 60), testing::MakeSlowCpuCluster());
  const int32_t units = ConstraintGroups(p.graph).num_groups();
  ASSERT_GT(units, exact::kMaxUnits);
  const PlacerOutput out = RunExact(p);
  EXPECT_TRUE(Contains(out.note, "the graph has " + std::to_string(units) + " units, more than the 40 it can search"))
      << out.note;
  // Only the one-shot baselines ran, and the answer is the fastest of
  // them all, not of the few that seed the search.
  EXPECT_LE(out.evaluations, static_cast<int64_t>(OneShotBaselineNames().size()));
  EXPECT_TRUE(Contains(out.note, "returned the best one-shot baseline")) << out.note;
  ASSERT_EQ(CheckPlacement(p.graph, p.cluster, out.placement), std::nullopt);
  const SimResult r = p.simulator.Run(out.placement);
  EXPECT_TRUE(r.ok());
  PlacementProblem problem = p.get();
  for (PlacerRun& run : RunPlacers(problem, OneShotBaselineNames())) {
    if (run.result.ok()) EXPECT_LE(r.step_time_us, run.result.step_time_us) << run.method;
  }
}

TEST(ExactPlacerTest, IsDeterministic) {
  OwnedProblem p(WideGraph(), testing::MakeTestCluster());
  const PlacerOutput a = RunExact(p);
  const PlacerOutput b = RunExact(p);
  EXPECT_EQ(a.placement, b.placement);
  EXPECT_EQ(a.evaluations, b.evaluations);
  EXPECT_EQ(a.note, b.note);
  // A budgeted run stops at the same point each time too.
  const PlacerOutput c = RunExact(p, SearchBudget{.max_evaluations = 8});
  const PlacerOutput d = RunExact(p, SearchBudget{.max_evaluations = 8});
  EXPECT_EQ(c.placement, d.placement);
  EXPECT_EQ(c.note, d.note);
}

TEST(ExactPlacerTest, ReportsProgress) {
  OwnedProblem p(RandomDag(2005, 16), testing::MakeTestCluster());  // some 8,000 evaluations to prove
  PlacementProblem problem = p.get();
  problem.budget.max_evaluations = 2500;
  std::vector<SearchProgress> calls;
  problem.progress = [&](const SearchProgress& progress) { calls.push_back(progress); };
  const PlacerOutput out = FindPlacer("exact").place(problem);
  ASSERT_GE(out.evaluations, 1000) << out.note;  // enough for at least one report
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.front().evaluations, 1000);
  EXPECT_GT(calls.front().best_step_time_us, 0);
  EXPECT_GT(calls.front().current_step_time_us, 0);
  EXPECT_EQ(calls.size(), 2u);  // at 1,000 and 2,000
}

// Twenty units, 3^20 placements: the search proves its answer within the
// default budget (in about 800 evaluations), and no placer or random
// placement beats it.
TEST(ExactPlacerTest, ProvesATwentyUnitGraph) {
  OwnedProblem p(RandomDag(2018, 20), testing::MakeTestCluster());
  const Grouping units = ConstraintGroups(p.graph);
  ASSERT_EQ(units.num_groups(), 20);
  const PlacerOutput out = RunExact(p);
  EXPECT_TRUE(Contains(out.note, "proven optimal")) << out.note;
  EXPECT_LT(out.evaluations, 5'000) << out.note;
  const double exact_us = p.simulator.Run(out.placement).step_time_us;
  int32_t placers_compared = 0;
  for (const PlacerInfo& placer : ListPlacers()) {
    if (placer.search) continue;
    PlacementProblem problem = p.get();
    Placement placement;
    try {
      placement = placer.place(problem).placement;
    } catch (const Error&) {
      continue;  // a method that declines this graph (or is not built yet)
    }
    const SimResult r = p.simulator.Run(placement);
    if (r.ok()) {
      EXPECT_LE(exact_us, r.step_time_us) << placer.name;
      ++placers_compared;
    }
  }
  EXPECT_GE(placers_compared, 5);
  Random random(7);
  exact::PartialBound bound(p.graph, p.cluster, p.cost, units);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int32_t> device_of_unit(units.num_groups());
    for (int32_t u = 0; u < units.num_groups(); ++u) {
      const auto& allowed = bound.allowed_devices(u);
      device_of_unit[u] = allowed[random.Below(allowed.size())];
    }
    const SimResult r = p.simulator.Run(ExpandGroupPlacement(units, device_of_unit));
    if (r.ok()) {
      EXPECT_LE(exact_us, r.step_time_us);
    }
  }
}

// Random partial placements of each random graph: the bound is never above
// the simulated step time of any completion, and a partial placement said
// to run out of memory does so in every completion.
TEST(ExactBoundTest, NeverAboveASimulatedStepTime) {
  int64_t checked = 0, said_out_of_memory = 0;
  for (auto& [cluster_name, cluster] : TestClusters()) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      OwnedProblem p(RandomDag(seed * 31 + 3, 6 + static_cast<int>(seed % 6)), cluster);
      SCOPED_TRACE(cluster_name + ", seed " + std::to_string(seed));
      const Grouping units = ConstraintGroups(p.graph);
      exact::PartialBound bound(p.graph, p.cluster, p.cost, units);
      Random random(seed);
      for (int trial = 0; trial < 30; ++trial) {
        std::vector<int32_t> partial(units.num_groups());
        for (int32_t u = 0; u < units.num_groups(); ++u) {
          const auto& allowed = bound.allowed_devices(u);
          partial[u] = random.Below(3) == 0 ? exact::kFree : allowed[random.Below(allowed.size())];
        }
        const double bound_us = bound.StepTimeLowerBoundUs(partial);
        const bool must_oom = bound.MustRunOutOfMemory(partial);
        said_out_of_memory += must_oom;
        for (int completion = 0; completion < 10; ++completion) {
          std::vector<int32_t> full = partial;
          for (int32_t u = 0; u < units.num_groups(); ++u) {
            const auto& allowed = bound.allowed_devices(u);
            if (full[u] == exact::kFree) full[u] = allowed[random.Below(allowed.size())];
          }
          const SimResult r = p.simulator.Run(ExpandGroupPlacement(units, full));
          ASSERT_FALSE(r.invalid) << r.reason;
          EXPECT_LE(bound_us, r.step_time_us);
          EXPECT_LE(bound.StepTimeLowerBoundUs(full), r.step_time_us);
          if (must_oom) {
            EXPECT_TRUE(r.oom);
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 10'000);
  EXPECT_GT(said_out_of_memory, 0);
}

// The bound is not trivially low: a chain on one device runs exactly its
// ops' times, which is what the bound gives; a chain split across two
// devices adds the copy.
TEST(ExactBoundTest, IsTightOnAChain) {
  OwnedProblem p(testing::Chains(1), testing::MakeSlowCpuCluster());  // three 10 ms ops
  const Grouping units = ConstraintGroups(p.graph);
  exact::PartialBound bound(p.graph, p.cluster, p.cost, units);
  const std::vector<int32_t> one_gpu(units.num_groups(), 1);
  const double sim_us = p.simulator.Run(ExpandGroupPlacement(units, one_gpu)).step_time_us;
  EXPECT_NEAR(bound.StepTimeLowerBoundUs(one_gpu), sim_us, 1e-3);
  EXPECT_NEAR(sim_us, 30'000, 1e-6);
  // Free units: the fastest device for each, still 30 ms.
  const std::vector<int32_t> all_free(units.num_groups(), exact::kFree);
  EXPECT_NEAR(bound.StepTimeLowerBoundUs(all_free), 30'000, 1e-3);
  // The first op on the slow CPU (100 ms), and the next two on a GPU after
  // the copy of its output (11 us) or on the CPU.
  std::vector<int32_t> first_on_cpu = all_free;
  first_on_cpu[units.group_of_op[0]] = 0;
  EXPECT_NEAR(bound.StepTimeLowerBoundUs(first_on_cpu), 120'011, 1e-3);
  // Op 0 on gpu:0 and op 1 on gpu:1: the 1000-byte copy (10 us latency and
  // 1 us of bytes) is on the path.
  std::vector<int32_t> split = all_free;
  split[units.group_of_op[0]] = 1;
  split[units.group_of_op[1]] = 2;
  EXPECT_NEAR(bound.StepTimeLowerBoundUs(split), 30'011, 1e-3);
}

TEST(ExactBoundTest, CountsDeviceLoad) {
  OwnedProblem p(testing::Chains(4), testing::MakeSlowCpuCluster());  // four chains of three 10 ms ops
  const Grouping units = ConstraintGroups(p.graph);
  exact::PartialBound bound(p.graph, p.cluster, p.cost, units);
  std::vector<int32_t> all_on_gpu0(units.num_groups(), 1);
  EXPECT_NEAR(bound.StepTimeLowerBoundUs(all_on_gpu0), 120'000, 1e-3);
  // Nothing fixed: twelve 10 ms ops over three one-op devices.
  std::vector<int32_t> all_free(units.num_groups(), exact::kFree);
  EXPECT_NEAR(bound.StepTimeLowerBoundUs(all_free), 40'000, 1e-3);
}

TEST(ExactBoundTest, MemoryCheckCountsParametersAndTensorsHeldAtOnce) {
  Graph g;
  Op a = MakeOp(0, "a", 1e6, 8'000'000);
  a.persistent_bytes = 4'000'000;
  g.AddOp(a);
  g.AddOp(MakeOp(1, "b", 1e6, 8'000'000));
  g.AddDataEdge(0, 0, 1);
  g.Finalize("two ops");
  OwnedProblem p(std::move(g), TwoDeviceCluster());  // gpu:0 holds 20 MB
  const Grouping units = ConstraintGroups(p.graph);
  exact::PartialBound bound(p.graph, p.cluster, p.cost, units);
  // Both on the GPU: 4 MB of parameters, a's 8 MB output held while b
  // allocates its own 8 MB: 20 MB, which fits exactly.
  EXPECT_FALSE(bound.MustRunOutOfMemory(std::vector<int32_t>{1, 1}));
  EXPECT_TRUE(p.simulator.Run({1, 1}).ok());
  // Shrink the GPU by a byte: now it cannot fit, and the simulator agrees.
  Cluster smaller = TwoDeviceCluster();
  smaller.devices[1].memory_bytes -= 1;
  Graph g2 = p.graph;
  OwnedProblem q(std::move(g2), smaller);
  exact::PartialBound bound2(q.graph, q.cluster, q.cost, units);
  EXPECT_TRUE(bound2.MustRunOutOfMemory(std::vector<int32_t>{1, 1}));
  EXPECT_TRUE(q.simulator.Run({1, 1}).oom);
  // b alone on the GPU with a free: a's tensor is at least its local size.
  EXPECT_FALSE(bound2.MustRunOutOfMemory(std::vector<int32_t>{exact::kFree, 1}));
}

TEST(ExactSymmetryTest, FindsInterchangeableDevicesOnlyWhereTheSimulationIsARelabelling) {
  OwnedProblem p(RandomDag(5, 8), testing::MakeTestCluster());
  EXPECT_EQ(exact::InterchangeableDevices(p.graph, p.cluster, p.cost), (std::vector<std::vector<int32_t>>{{1, 2}}));
  OwnedProblem bus(RandomDag(5, 8), testing::MakeTestCluster(/*shared_bus=*/true));
  EXPECT_TRUE(exact::InterchangeableDevices(bus.graph, bus.cluster, bus.cost).empty());
  OwnedProblem staged(RandomDag(5, 8), testing::MakeTestCluster(false, /*peer_link=*/false));
  EXPECT_TRUE(exact::InterchangeableDevices(staged.graph, staged.cluster, staged.cost).empty());
  OwnedProblem uneven(RandomDag(5, 8), UnevenCluster());
  EXPECT_TRUE(exact::InterchangeableDevices(uneven.graph, uneven.cluster, uneven.cost).empty());

  // Where it says so, swapping the two GPUs changes nothing the simulator
  // reports.
  const Grouping units = ConstraintGroups(p.graph);
  exact::PartialBound bound(p.graph, p.cluster, p.cost, units);
  Random random(17);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> device_of_unit(units.num_groups());
    for (int32_t u = 0; u < units.num_groups(); ++u) {
      const auto& allowed = bound.allowed_devices(u);
      device_of_unit[u] = allowed[random.Below(allowed.size())];
    }
    Placement placement = ExpandGroupPlacement(units, device_of_unit);
    Placement swapped = placement;
    for (int32_t& d : swapped) d = d == 1 ? 2 : d == 2 ? 1 : d;
    const SimResult x = p.simulator.Run(placement);
    const SimResult y = p.simulator.Run(swapped);
    EXPECT_EQ(x.step_time_us, y.step_time_us);
    EXPECT_EQ(x.oom, y.oom);
  }
}

}  // namespace
}  // namespace devplace
