// Incremental evaluation (Simulator::Remember / RunChanged / KeepChanged)
// against full runs: after any move, the same answer bit for bit.
#include <gtest/gtest.h>

#include <map>

#include "cluster/presets.h"
#include "cost/cost_model.h"
#include "cost/op_time_table.h"
#include "models/registry.h"
#include "models/synthetic.h"
#include "sim/environment.h"
#include "sim/simulator.h"
#include "test_util.h"
#include "zero_time_graph.h"
#include "util/random.h"

namespace devplace {
namespace {

void ExpectSameResult(const SimResult& full, const SimResult& incremental, const std::string& where) {
  SCOPED_TRACE(where);
  ASSERT_EQ(full.step_time_us, incremental.step_time_us);  // exactly, not nearly
  ASSERT_EQ(full.invalid, incremental.invalid);
  ASSERT_EQ(full.oom, incremental.oom);
  ASSERT_EQ(full.failed, incremental.failed);
  ASSERT_EQ(full.reason, incremental.reason);
  ASSERT_EQ(full.devices.size(), incremental.devices.size());
  for (size_t d = 0; d < full.devices.size(); ++d) {
    const DeviceStats& a = full.devices[d];
    const DeviceStats& b = incremental.devices[d];
    for (int p = 0; p < kNumPhases; ++p) ASSERT_EQ(a.compute_us[p], b.compute_us[p]) << "device " << d;
    ASSERT_EQ(a.copy_in_us, b.copy_in_us) << "device " << d;
    ASSERT_EQ(a.copy_out_us, b.copy_out_us) << "device " << d;
    ASSERT_EQ(a.bytes_in, b.bytes_in) << "device " << d;
    ASSERT_EQ(a.bytes_out, b.bytes_out) << "device " << d;
    ASSERT_EQ(a.persistent_bytes, b.persistent_bytes) << "device " << d;
    ASSERT_EQ(a.peak_memory_bytes, b.peak_memory_bytes) << "device " << d;
    ASSERT_EQ(a.num_ops, b.num_ops) << "device " << d;
    ASSERT_EQ(a.oom, b.oom) << "device " << d;
  }
}

// The units a search moves: ops of one co-location group, or one op.
std::vector<std::vector<int32_t>> Units(const Graph& graph) {
  std::vector<std::vector<int32_t>> units;
  std::map<std::string, size_t> unit_of_group;
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    const std::string& group = graph.op(op).colocation_group;
    if (group.empty()) {
      units.push_back({op});
      continue;
    }
    auto [it, added] = unit_of_group.emplace(group, units.size());
    if (added) units.emplace_back();
    units[it->second].push_back(op);
  }
  return units;
}

struct MoveStats {
  int moves = 0;
  int resumed = 0;     // runs that started from a snapshot
  int oom = 0;
  int invalid = 0;
};

// The other ways to a step time, on the placement a move made: a run
// with recorded events (the general run, not the plain one a search
// makes) and the environment's batch and single measurements, with one
// step and with the protocol's several (no noise: every step alike).
void ExpectOtherPathsAgree(Simulator& full, SimulatedEnvironment& one_step, SimulatedEnvironment& protocol,
                           const Placement& placement, const SimResult& expected, const std::string& where) {
  SCOPED_TRACE(where);
  SimOptions recorded;
  recorded.record_events = true;
  ExpectSameResult(expected, full.Run(placement, recorded), "recorded run");
  if (::testing::Test::HasFatalFailure() || expected.invalid) return;
  for (SimulatedEnvironment* environment : {&one_step, &protocol}) {
    const std::vector<Outcome> batch = environment->Measure({placement, placement}, 0, 0);
    for (const Outcome& outcome : {batch[0], batch[1], environment->MeasureOne(placement)}) {
      ASSERT_EQ(outcome.ok, expected.ok());
      ASSERT_EQ(outcome.oom(), expected.oom);
      if (outcome.ok) {
        ASSERT_EQ(outcome.step_time_s, expected.step_time_us * 1e-6);  // exactly
      }
    }
  }
}

// Random moves of 1-2 units from a random start; each one evaluated in full
// and incrementally; about a third kept. Now and then a unit goes to a
// device that cannot run it (an invalid placement). Every
// `other_paths_every` moves (0: never), the other paths too.
MoveStats CheckRandomMoves(const Graph& graph, const Cluster& cluster, int moves, uint64_t seed,
                           const OpTimeTable& op_times = {}, int other_paths_every = 0) {
  CostModel cost(cluster, op_times);
  Simulator full(graph, cluster, cost);
  SimulatedEnvironmentOptions one_step_options;
  SimulatedEnvironment one_step(graph, cluster, cost, one_step_options);
  SimulatedEnvironmentOptions protocol_options;
  protocol_options.measure_steps = 3;
  protocol_options.workers = 2;
  SimulatedEnvironment protocol(graph, cluster, cost, protocol_options);
  Simulator incremental(graph, cluster, cost);
  const std::vector<std::vector<int32_t>> units = Units(graph);
  const int32_t D = cluster.num_devices();
  Random random(seed);
  auto allowed = [&](const std::vector<int32_t>& unit, int32_t d) {
    for (int32_t op : unit) {
      if (!(graph.op(op).device_kinds & MaskOf(cluster.devices[d].kind))) return false;
    }
    return true;
  };
  auto pick_device = [&](const std::vector<int32_t>& unit) {
    for (int tries = 0; tries < 100; ++tries) {
      const int32_t d = static_cast<int32_t>(random.Below(D));
      if (allowed(unit, d) || random.Uniform() < 0.02) return d;
    }
    return 0;
  };
  Placement current(graph.num_ops(), 0);
  for (const auto& unit : units) {
    const int32_t d = pick_device(unit);
    for (int32_t op : unit) current[op] = allowed(unit, d) ? d : 0;
  }
  ExpectSameResult(full.Run(current), incremental.Remember(current), "remember");
  MoveStats stats;
  for (int i = 0; i < moves; ++i) {
    Placement next = current;
    std::vector<int32_t> changed;
    const int num_units = random.Uniform() < 0.2 ? 2 : 1;
    for (int k = 0; k < num_units; ++k) {
      const auto& unit = units[random.Below(units.size())];
      const int32_t d = pick_device(unit);
      for (int32_t op : unit) {
        next[op] = d;
        changed.push_back(op);
      }
    }
    const SimResult expected = full.Run(next);
    const SimResult got = incremental.RunChanged(next, changed);
    ExpectSameResult(expected, got, "move " + std::to_string(i));
    if (other_paths_every > 0 && i % other_paths_every == 0) {
      ExpectOtherPathsAgree(full, one_step, protocol, next, expected, "move " + std::to_string(i));
    }
    if (::testing::Test::HasFatalFailure()) return stats;
    ++stats.moves;
    stats.resumed += incremental.last_skipped_fraction() > 0;
    stats.oom += got.oom;
    stats.invalid += got.invalid;
    if (!got.invalid && random.Uniform() < 0.35) {
      incremental.KeepChanged();
      current = next;
    }
  }
  return stats;
}

TEST(IncrementalSimulatorTest, EqualsFullRunsOnRandomSyntheticGraphsAndMoves) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    SyntheticOptions options;
    options.num_ops = 300 + 200 * static_cast<int64_t>(seed);
    options.width = 2 + static_cast<int64_t>(seed);
    options.seed = seed;
    const Graph graph = MakeSyntheticGraph(options);
    CheckRandomMoves(graph, *MakeClusterPreset("k80x4"), 600, seed);
    if (HasFatalFailure()) return;
  }
}

// Host devices whose cores do copies (clusters --detect's): a copy waits in
// its device's ready queue with the ops, staged copies through a host CPU
// included.
TEST(IncrementalSimulatorTest, EqualsFullRunsWhenHostCoresDoTheCopies) {
  SyntheticOptions options;
  options.num_ops = 700;
  options.width = 4;
  options.seed = 5;
  const Graph graph = MakeSyntheticGraph(options);
  Cluster with_host = *MakeClusterPreset("k80x4");
  with_host.devices[0].cores = {0};  // its CPU is this machine's
  with_host.Finalize("k80x4 with a host core");
  CheckRandomMoves(graph, with_host, 600, 11);
  if (HasFatalFailure()) return;

  Cluster host;
  host.name = "host";
  for (int32_t d = 0; d < 3; ++d) {
    host.devices.push_back(testing::MakeDevice("cpu:" + std::to_string(d), DeviceKind::kCpu, int64_t{8} << 30));
    host.devices.back().cores = {d};
  }
  host.links = {{0, 1, 2e10, 10, -1}, {0, 2, 2e10, 10, -1}, {1, 2, 2e10, 10, -1}};
  host.Finalize("three host devices");
  CheckRandomMoves(graph, host, 600, 12);
  if (HasFatalFailure()) return;

  // Idle devices that wake late: a resumed run must know since when each
  // device was idle at its snapshot.
  for (Device& d : host.devices) {
    d.wake_up_us = 40;
    d.wake_up_after_idle_us = 15;
  }
  host.Finalize("three host devices that wake late");
  CheckRandomMoves(graph, host, 600, 13);
}

// Devices small enough that many placements run out of memory: peaks and
// out-of-memory flags depend on persistent bytes the move changed.
TEST(IncrementalSimulatorTest, EqualsFullRunsWhenDevicesRunOutOfMemory) {
  SyntheticOptions options;
  options.num_ops = 600;
  options.width = 4;
  options.batch = 4096;
  const Graph graph = MakeSyntheticGraph(options);
  Cluster cluster = *MakeClusterPreset("k80x4");
  // Capacity: half the peak of a layer-wise split, so that some
  // placements fit and others do not.
  int64_t peak_bytes = 0;
  {
    CostModel cost(cluster);
    Simulator sim(graph, cluster, cost);
    Placement layerwise(graph.num_ops());
    for (const auto& unit : Units(graph)) {
      const bool gpu = graph.op(unit.front()).device_kinds & MaskOf(DeviceKind::kGpu);
      for (int32_t op : unit) layerwise[op] = gpu ? 1 + static_cast<int32_t>(unit.front() * 4LL / graph.num_ops()) : 0;
    }
    for (const DeviceStats& d : sim.Run(layerwise).devices) peak_bytes = std::max(peak_bytes, d.peak_memory_bytes);
  }
  for (Device& d : cluster.devices) {
    d.memory_bytes = peak_bytes / 2;
    d.reserved_bytes = 0;
  }
  cluster.Finalize("small k80x4");
  const MoveStats stats = CheckRandomMoves(graph, cluster, 800, 7);
  if (HasFatalFailure()) return;
  EXPECT_GT(stats.oom, 0);
  EXPECT_LT(stats.oom, stats.moves);
}

// Built-in models: control edges, CPU-only ops, staged copies through the
// host, devices that run several ops at once.
TEST(IncrementalSimulatorTest, EqualsFullRunsOnBuiltInModels) {
  for (const char* cluster_name : {"k80x2", "p100x4"}) {
    ModelParams params;
    const Graph graph = MakeModel("tiny", params);
    const MoveStats stats = CheckRandomMoves(graph, *MakeClusterPreset(cluster_name), 400, 11);
    if (HasFatalFailure()) return;
    EXPECT_GT(stats.invalid, 0) << cluster_name;
  }
  const Graph rnnlm = MakeModel("rnnlm");
  const MoveStats stats = CheckRandomMoves(rnnlm, *MakeClusterPreset("k80x4"), 150, 3);
  if (HasFatalFailure()) return;
  // Every op that reads a parameter matters from the first instant (the
  // parameter is sent when the step starts); the others resume.
  EXPECT_GT(stats.resumed, 0);
}

// A random layered graph with one source: every other op matters only once
// its inputs are made, so most moves resume from a snapshot.
Graph RandomLayeredGraph(int32_t layers, int32_t width, uint64_t seed) {
  Random random(seed);
  Graph graph;
  int64_t id = 0;
  auto add = [&](const std::string& name) {
    Op op;
    op.id = id++;
    op.name = name;
    op.type = random.Uniform() < 0.5 ? "MatMul" : "Add";
    op.flops = 1e6 + 1e9 * random.Uniform();
    TensorSpec t;
    t.bytes = 4 * static_cast<int64_t>(1 + random.Below(1 << 20));
    t.shape = {t.bytes / 4};
    op.outputs.push_back(t);
    return graph.AddOp(op);
  };
  std::vector<int32_t> previous = {add("source")};
  for (int32_t l = 0; l < layers; ++l) {
    std::vector<int32_t> layer;
    for (int32_t w = 0; w < width; ++w) {
      const int32_t op = add("l" + std::to_string(l) + "_" + std::to_string(w));
      const int inputs = 1 + static_cast<int>(random.Below(2));
      for (int k = 0; k < inputs; ++k) graph.AddDataEdge(previous[random.Below(previous.size())], 0, op);
      layer.push_back(op);
    }
    previous = layer;
  }
  graph.Finalize("random layered graph");
  return graph;
}

TEST(IncrementalSimulatorTest, MostMovesResumeWhereOpsReadNoParameters) {
  const Graph graph = RandomLayeredGraph(60, 6, 5);
  for (const char* cluster_name : {"k80x4", "p100x2"}) {
    const MoveStats stats = CheckRandomMoves(graph, *MakeClusterPreset(cluster_name), 500, 9);
    if (HasFatalFailure()) return;
    EXPECT_GT(stats.resumed, stats.moves / 2) << cluster_name << ": " << stats.resumed << " of " << stats.moves;
  }
}

// cpu:0, gpu:0, gpu:1 (parallel_ops 2 on gpu:1) linked without latency, so
// that an empty tensor's hop takes no time either.
Cluster ZeroLatencyCluster() {
  Cluster cluster = testing::MakeTestCluster();
  for (Link& link : cluster.links) link.latency_us = 0;
  cluster.devices[2].parallel_ops = 2;
  cluster.name = "zero-latency test";
  cluster.Finalize("zero-latency test cluster");
  return cluster;
}

TEST(IncrementalSimulatorTest, EqualsFullRunsWhenOpsTakeNoTime) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const testing::TimedGraph timed = testing::ZeroTimeGraph(150 + 100 * static_cast<int32_t>(seed), seed);
    std::vector<Cluster> clusters = {testing::MakeTestCluster(), ZeroLatencyCluster(), testing::MakeTestCluster(true)};
    clusters[2].name = "test, one bus";
    for (const Cluster& cluster : clusters) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " on " + cluster.name);
      const MoveStats stats = CheckRandomMoves(timed.graph, cluster, 1000, seed, timed.op_times, 50);
      if (HasFatalFailure()) return;
      EXPECT_GT(stats.resumed, stats.moves / 4);  // the resumed runs are the ones under test
    }
  }
}

// The same graphs where host cores do the copies, devices wake late and
// host devices slow each other down, and where devices run out of memory.
TEST(IncrementalSimulatorTest, EqualsFullRunsWhenOpsTakeNoTimeOnHostDevicesAndSmallMemory) {
  const testing::TimedGraph timed = testing::ZeroTimeGraph(300, 21);
  Cluster host;
  host.name = "host";
  for (int32_t d = 0; d < 3; ++d) {
    host.devices.push_back(testing::MakeDevice("cpu:" + std::to_string(d), DeviceKind::kCpu));
    host.devices.back().cores = {d};
    host.devices.back().wake_up_us = 4;
    host.devices.back().wake_up_after_idle_us = d == 0 ? 0 : 2;
  }
  host.devices.push_back(testing::MakeDevice("gpu:0", DeviceKind::kGpu));
  host.links = {{0, 1, 1e9, 0, -1}, {0, 2, 1e9, 1, -1}, {1, 2, 1e9, 0, -1}, {0, 3, 1e9, 0, -1}};
  host.Finalize("three host devices and a GPU");
  const MoveStats on_host = CheckRandomMoves(timed.graph, host, 1500, 22, timed.op_times, 50);
  if (HasFatalFailure()) return;
  EXPECT_GT(on_host.resumed, on_host.moves / 4);

  // Capacity: half the peak of a split in two halves by op index over the
  // GPUs (units with CPU-only ops on the CPU), so that some placements fit
  // and others do not.
  Cluster small = testing::MakeTestCluster();
  int64_t peak_bytes = 0;
  {
    CostModel cost(small, timed.op_times);
    Simulator sim(timed.graph, small, cost);
    Placement halves(timed.graph.num_ops());
    for (const auto& unit : Units(timed.graph)) {
      bool gpu = true;
      for (int32_t op : unit) gpu = gpu && (timed.graph.op(op).device_kinds & MaskOf(DeviceKind::kGpu));
      for (int32_t op : unit) halves[op] = gpu ? 1 + static_cast<int32_t>(unit.front() * 2LL / timed.graph.num_ops()) : 0;
    }
    const SimResult split = sim.Run(halves);
    ASSERT_FALSE(split.invalid) << split.reason;
    for (const DeviceStats& d : split.devices) peak_bytes = std::max(peak_bytes, d.peak_memory_bytes);
  }
  for (Device& d : small.devices) d.memory_bytes = peak_bytes / 2;
  small.Finalize("small test cluster");
  const MoveStats in_small = CheckRandomMoves(timed.graph, small, 1500, 23, timed.op_times, 50);
  if (HasFatalFailure()) return;
  EXPECT_GT(in_small.oom, 0);
  EXPECT_LT(in_small.oom, in_small.moves);
  EXPECT_GT(in_small.resumed, in_small.moves / 4);
}

TEST(IncrementalSimulatorTest, WithoutARememberedPlacementRunsInFull) {
  const Graph graph = MakeSyntheticGraph({});
  const Cluster cluster = *MakeClusterPreset("k80x2");
  CostModel cost(cluster);
  Simulator sim(graph, cluster, cost);
  const Placement placement(graph.num_ops(), 1);
  const std::vector<int32_t> changed = {0};
  const SimResult expected = sim.Run(placement);
  ExpectSameResult(expected, sim.RunChanged(placement, changed), "not remembered");
  EXPECT_EQ(sim.last_skipped_fraction(), 0);
}

}  // namespace
}  // namespace devplace
