// Incremental evaluation (Simulator::Remember / RunChanged / KeepChanged)
// against full runs: after any move, the same answer bit for bit.
#include <gtest/gtest.h>

#include <map>

#include "cluster/presets.h"
#include "cost/cost_model.h"
#include "models/registry.h"
#include "models/synthetic.h"
#include "sim/simulator.h"
#include "test_util.h"
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

// Random moves of 1-2 units from a random start; each one evaluated in full
// and incrementally; about a third kept. Now and then a unit goes to a
// device that cannot run it (an invalid placement).
MoveStats CheckRandomMoves(const Graph& graph, const Cluster& cluster, int moves, uint64_t seed) {
  CostModel cost(cluster);
  Simulator full(graph, cluster, cost);
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
