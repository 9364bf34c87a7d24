// Digests of many simulator runs, for checking that a change meant to make
// the simulator faster changes no answer: run it before and after and diff
// the output (every line must match, bit for bit). A second use: a fixed
// amount of work for valgrind --tool=callgrind, whose instruction counts do
// not depend on the machine's load.
//
//   build/bench/sim_fingerprint                   # digests, one line per case
//   build/bench/sim_fingerprint --repeat N OPS random|layerwise
//                                                 # N runs of one case, for callgrind
//
// The digest covers the step time, the flags and reason, every device's
// statistics, and with recorded events every op, hop and memory event.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cluster/presets.h"
#include "cost/cost_model.h"
#include "graph/grouping.h"
#include "models/registry.h"
#include "models/synthetic.h"
#include "sim/simulator.h"
#include "util/random.h"

namespace devplace {
namespace {

// FNV-1a over the bytes of each value.
class Digest {
 public:
  template <typename T>
  void Add(const T& value) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    for (unsigned char b : bytes) hash_ = (hash_ ^ b) * 1099511628211ull;
  }
  void Add(const std::string& s) {
    Add(s.size());
    for (char c : s) Add(c);
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 14695981039346656037ull;
};

uint64_t DigestOf(const SimResult& r) {
  Digest h;
  h.Add(r.step_time_us);
  h.Add(r.invalid);
  h.Add(r.oom);
  h.Add(r.failed);
  h.Add(r.reason);
  for (const DeviceStats& d : r.devices) {
    for (double c : d.compute_us) h.Add(c);
    h.Add(d.copy_in_us);
    h.Add(d.copy_out_us);
    h.Add(d.bytes_in);
    h.Add(d.bytes_out);
    h.Add(d.persistent_bytes);
    h.Add(d.peak_memory_bytes);
    h.Add(d.num_ops);
    h.Add(d.oom);
  }
  h.Add(r.op_events.size());
  for (const OpEvent& e : r.op_events) {
    h.Add(e.op);
    h.Add(e.device);
    h.Add(e.start_us);
    h.Add(e.end_us);
  }
  h.Add(r.transfer_events.size());
  for (const TransferEvent& e : r.transfer_events) {
    h.Add(e.src_op);
    h.Add(e.src_output);
    h.Add(e.from_device);
    h.Add(e.to_device);
    h.Add(e.channel);
    h.Add(e.start_us);
    h.Add(e.end_us);
    h.Add(e.bytes);
  }
  h.Add(r.memory_events.size());
  for (const MemoryEvent& e : r.memory_events) {
    h.Add(e.device);
    h.Add(e.time_us);
    h.Add(e.bytes_in_use);
  }
  return h.value();
}

void Print(const std::string& name, const SimResult& r) {
  std::printf("%-48s %-22a %016llx%s\n", name.c_str(), r.step_time_us, static_cast<unsigned long long>(DigestOf(r)),
              r.oom ? " oom" : r.invalid ? " invalid" : "");
}

// Each co-location group on a random device that can run it.
Placement RandomGroupPlacement(const Graph& graph, const Cluster& cluster, const Grouping& grouping, Random& random) {
  std::vector<int32_t> device_of_group(grouping.num_groups());
  for (int32_t g = 0; g < grouping.num_groups(); ++g) {
    do {
      device_of_group[g] = static_cast<int32_t>(random.Below(cluster.num_devices()));
    } while (!(grouping.groups[g].device_kinds & MaskOf(cluster.devices[device_of_group[g]].kind)));
  }
  return ExpandGroupPlacement(grouping, device_of_group);
}

// Contiguous runs of groups per GPU, the CPU for what no GPU runs.
Placement LayerwisePlacement(const Cluster& cluster, const Grouping& grouping) {
  std::vector<int32_t> device_of_group(grouping.num_groups());
  const int32_t num_gpus = cluster.num_devices() - 1;
  for (int32_t g = 0; g < grouping.num_groups(); ++g) {
    const bool gpu_ok = grouping.groups[g].device_kinds & MaskOf(DeviceKind::kGpu);
    device_of_group[g] = gpu_ok ? 1 + static_cast<int32_t>(int64_t{g} * num_gpus / grouping.num_groups()) : 0;
  }
  return ExpandGroupPlacement(grouping, device_of_group);
}

void FingerprintGraph(const std::string& graph_name, const Graph& graph, const std::string& cluster_name) {
  const Cluster cluster = *MakeClusterPreset(cluster_name);
  const CostModel cost(cluster);
  Simulator sim(graph, cluster, cost);
  const Grouping grouping = BuildGrouping(graph);
  const std::string prefix = graph_name + " " + cluster_name + " ";
  Random random(3);

  std::vector<std::pair<std::string, Placement>> placements;
  placements.emplace_back("layerwise", LayerwisePlacement(cluster, grouping));
  for (int i = 0; i < 3; ++i) placements.emplace_back("random" + std::to_string(i), RandomGroupPlacement(graph, cluster, grouping, random));
  placements.emplace_back("single1", SingleDevicePlacement(graph, cluster, std::min(1, cluster.num_devices() - 1)));
  {
    Placement per_op(graph.num_ops());  // most likely invalid: splits groups, ops on devices that cannot run them
    for (int32_t& d : per_op) d = static_cast<int32_t>(random.Below(cluster.num_devices()));
    placements.emplace_back("per_op", per_op);
  }

  for (const auto& [name, placement] : placements) {
    Print(prefix + name, sim.Run(placement));
    SimOptions recorded;
    recorded.record_events = true;
    Print(prefix + name + " events", sim.Run(placement, recorded));
    SimOptions stop;
    stop.stop_at_oom = true;
    stop.record_events = true;
    Print(prefix + name + " stop_at_oom", sim.Run(placement, stop));
    SimOptions noisy;
    noisy.record_events = true;
    noisy.noise.jitter = 0.2;
    noisy.noise.failure_probability = 0.1;
    noisy.seed = 5;
    Print(prefix + name + " noise", sim.Run(placement, noisy));
  }

  // Incremental runs: moves of one unit (as the search placers move them)
  // from the layer-wise placement, some kept; every eighth move is of a
  // whole group to any device, which often cannot resume or run.
  GroupingOptions unit_options;
  unit_options.merge_single_consumer = false;
  const Grouping units = BuildGrouping(graph, unit_options);
  std::vector<const Group*> resumable;  // units whose every op has inputs: a move may resume from a snapshot
  for (const Group& g : units.groups) {
    bool all_have_inputs = true;
    for (int32_t op : g.ops) all_have_inputs &= !graph.in_data_edges(op).empty() || !graph.control_predecessors(op).empty();
    if (all_have_inputs) resumable.push_back(&g);
  }
  Placement base = placements[0].second;
  Print(prefix + "remember", sim.Remember(base));
  for (int move = 0; move < 40; ++move) {
    const bool any = move % 8 == 7 || resumable.empty();
    const Group& group = any ? grouping.groups[random.Below(grouping.num_groups())] : *resumable[random.Below(resumable.size())];
    const int32_t to = any || cluster.num_devices() == 1 ? static_cast<int32_t>(random.Below(cluster.num_devices()))
                                                         : 1 + static_cast<int32_t>(random.Below(cluster.num_devices() - 1));
    Placement next = base;
    for (int32_t op : group.ops) next[op] = to;
    const SimResult r = sim.RunChanged(next, group.ops);
    char skipped[32];
    std::snprintf(skipped, sizeof skipped, " skip=%.4f", sim.last_skipped_fraction());
    Print(prefix + "move" + std::to_string(move) + skipped, r);
    if (move % 3 == 0 && r.ok()) {
      sim.KeepChanged();
      base = next;
    }
  }
}

void FingerprintAll() {
  for (const char* cluster : {"k80x4", "p100x2", "h100x8"}) {
    for (int64_t ops : {300, 3000}) {
      for (int64_t width : {2, 8}) {
        SyntheticOptions options;
        options.num_ops = ops;
        options.width = width;
        FingerprintGraph("synthetic" + std::to_string(ops) + "w" + std::to_string(width), MakeSyntheticGraph(options), cluster);
      }
    }
    {
      SyntheticOptions big_batch;  // out of memory on some devices
      big_batch.num_ops = 1000;
      big_batch.width = 8;
      big_batch.batch = 8192;
      FingerprintGraph("synthetic1000b8192", MakeSyntheticGraph(big_batch), cluster);
    }
    for (const char* model : {"rnnlm", "nmt", "inception_v3"}) {
      if (!IsModelName(model)) continue;
      FingerprintGraph(model, MakeModel(model), cluster);
    }
  }
}

// `repeat` runs of one benchmark case, for callgrind.
int Repeat(int repeat, int64_t ops, const std::string& kind) {
  SyntheticOptions options;
  options.num_ops = ops;
  options.width = 8;
  const Graph graph = MakeSyntheticGraph(options);
  const Cluster cluster = *MakeClusterPreset("k80x4");
  const CostModel cost(cluster);
  Simulator sim(graph, cluster, cost);
  const Grouping grouping = BuildGrouping(graph);
  Random random(7);
  const Placement placement =
      kind == "random" ? RandomGroupPlacement(graph, cluster, grouping, random) : LayerwisePlacement(cluster, grouping);
  double sum_us = 0;
  for (int i = 0; i < repeat; ++i) sum_us += sim.Run(placement).step_time_us;
  std::printf("%d runs, %d ops, %s: step %a us\n", repeat, graph.num_ops(), kind.c_str(), sum_us / repeat);
  return 0;
}

}  // namespace
}  // namespace devplace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--repeat") {
    return devplace::Repeat(std::atoi(argv[2]), std::atoll(argv[3]), argv[4]);
  }
  devplace::FingerprintAll();
  return 0;
}
