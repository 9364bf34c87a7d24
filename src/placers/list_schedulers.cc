// Baechi's memory-constrained list schedulers (Jeon et al., SoCC 2020):
// m-TOPO, m-ETF and m-SCT. They place ops one by one, keeping a running
// estimate of each device's memory, and never put an op where it would not
// fit while another device has room.
//
// Variables and other source ops bound by co-location to ops further on
// (a variable and its update) are "deferred": placed at the end with their
// unit, so that they do not pin their unit to a device before the scheduler
// knows where the real work goes. A deferred op is never scheduled, so no
// op waits for it: neither its data edges nor its control edges hold back
// their destinations (else those, and all that follows them, are never
// released and stay on no device).
//
// The memory estimate: a co-location unit's parameters are reserved when its
// first op is placed; an op's outputs are added when it is placed and freed
// once every consumer of theirs has been placed. The simulator checks the
// result, and RepairMemory fixes what the estimate missed.
#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "placers/memory_repair.h"
#include "placers/methods.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

class ListScheduleState {
 public:
  explicit ListScheduleState(const PlacementProblem& problem)
      : problem_(problem),
        graph_(problem.graph),
        cluster_(problem.cluster),
        units_(BuildGrouping(problem.graph, GroupingOptionsFor(problem.cluster))),
        device_of_op_(graph_.num_ops(), -1),
        device_of_unit_(units_.num_groups(), -1),
        memory_bytes_(cluster_.num_devices(), 0),
        consumers_left_(graph_.num_ops(), 0),
        deferred_(graph_.num_ops(), 0) {
    for (const DataEdge& e : graph_.data_edges()) ++consumers_left_[e.src];
    auto is_source = [&](int32_t op) {
      return graph_.in_data_edges(op).empty() && graph_.control_predecessors(op).empty();
    };
    for (const Group& unit : units_.groups) {
      bool has_non_source = std::any_of(unit.ops.begin(), unit.ops.end(), [&](int32_t op) { return !is_source(op); });
      if (!has_non_source) continue;
      for (int32_t op : unit.ops) deferred_[op] = is_source(op);
    }
  }

  bool deferred(int32_t op) const { return deferred_[op]; }

  // Places the deferred ops with their unit, or, if nothing else in the
  // unit was placed, beside their first consumer.
  void PlaceDeferred(const std::vector<int32_t>& pool) {
    for (int32_t op = 0; op < graph_.num_ops(); ++op) {
      if (!deferred_[op] || device_of_op_[op] >= 0) continue;
      int32_t d = unit_device(op);
      if (d < 0) {
        for (int32_t e : graph_.out_data_edges(op)) {
          int32_t consumer_device = device_of_op_[graph_.data_edges()[e].dst];
          if (consumer_device >= 0 && CanRun(op, consumer_device)) {
            d = consumer_device;
            break;
          }
        }
      }
      if (d < 0) d = *Candidates(op, pool).begin();
      Place(op, d);
    }
  }

  const Grouping& units() const { return units_; }
  int32_t unit_device(int32_t op) const { return device_of_unit_[units_.group_of_op[op]]; }
  int32_t device_of(int32_t op) const { return device_of_op_[op]; }

  // Whether `d` can run `op` and the rest of its unit, which must follow it
  // there: a unit merged into a CPU-only consumer may go nowhere else, even
  // if the op placed first could.
  bool CanRun(int32_t op, int32_t d) const {
    return (units_.groups[units_.group_of_op[op]].device_kinds & MaskOf(cluster_.devices[d].kind)) != 0;
  }

  // Bytes placing `op` on `d` adds to d's estimate.
  int64_t AddedBytes(int32_t op, int32_t d) const {
    int64_t bytes = 0;
    for (const TensorSpec& t : graph_.op(op).outputs) bytes += t.aliases_persistent ? 0 : t.bytes;
    if (unit_device(op) != d) bytes += units_.groups[units_.group_of_op[op]].persistent_bytes;
    return bytes;
  }

  bool Fits(int32_t op, int32_t d) const {
    return memory_bytes_[d] + AddedBytes(op, d) <= cluster_.devices[d].usable_memory_bytes();
  }

  // A short list of devices without heap allocation (clusters have at most
  // 64 devices), since the schedulers ask for one per op per step.
  struct DeviceList {
    int32_t devices[64];
    int32_t size = 0;
    void Add(int32_t d) { devices[size++] = d; }
    const int32_t* begin() const { return devices; }
    const int32_t* end() const { return devices + size; }
    bool Contains(int32_t d) const { return std::find(begin(), end(), d) != end(); }
  };

  // Devices `op` may go to: its unit's device if bound, else the devices of
  // `pool` (or, if none can run it, of the cluster) that can run it, keeping
  // those where it fits in memory if any does, else the one with most room.
  DeviceList Candidates(int32_t op, const std::vector<int32_t>& pool) const {
    DeviceList out;
    if (unit_device(op) >= 0) {
      out.Add(unit_device(op));
      return out;
    }
    DeviceList runnable;
    for (int32_t d : pool) {
      if (CanRun(op, d)) runnable.Add(d);
    }
    if (runnable.size == 0) {
      for (int32_t d = 0; d < cluster_.num_devices(); ++d) {
        if (CanRun(op, d)) runnable.Add(d);
      }
    }
    for (int32_t d : runnable) {
      if (Fits(op, d)) out.Add(d);
    }
    if (out.size > 0) return out;
    if (runnable.size == 0) {
      out.Add(0);  // nothing can run it; the simulator will say so
      return out;
    }
    out.Add(*std::max_element(runnable.begin(), runnable.end(), [&](int32_t a, int32_t b) {
      return cluster_.devices[a].usable_memory_bytes() - memory_bytes_[a] <
             cluster_.devices[b].usable_memory_bytes() - memory_bytes_[b];
    }));
    return out;
  }

  int32_t placed_ops() const { return placed_ops_; }

  void Place(int32_t op, int32_t d) {
    ++placed_ops_;
    memory_bytes_[d] += AddedBytes(op, d);
    device_of_op_[op] = d;
    device_of_unit_[units_.group_of_op[op]] = d;
    // Outputs count until all their consumers are placed: inputs whose last
    // consumer this is stop counting (if their producer is placed yet), and
    // a deferred op placed after its consumers counts for nothing.
    auto release_outputs = [&](int32_t producer) {
      for (const TensorSpec& t : graph_.op(producer).outputs) {
        if (!t.aliases_persistent) memory_bytes_[device_of_op_[producer]] -= t.bytes;
      }
    };
    for (int32_t e : graph_.in_data_edges(op)) {
      int32_t src = graph_.data_edges()[e].src;
      if (--consumers_left_[src] == 0 && device_of_op_[src] >= 0) release_outputs(src);
    }
    if (consumers_left_[op] == 0) release_outputs(op);
  }

  PlacerOutput Finish() {
    PlacerOutput out;
    out.placement = RepairMemory(problem_, units_, device_of_unit_, out.note);
    return out;
  }

 private:
  const PlacementProblem& problem_;
  const Graph& graph_;
  const Cluster& cluster_;
  Grouping units_;
  std::vector<int32_t> device_of_op_;
  std::vector<int32_t> device_of_unit_;
  std::vector<int64_t> memory_bytes_;
  std::vector<int32_t> consumers_left_;
  std::vector<char> deferred_;
  int32_t placed_ops_ = 0;
};

// The devices list schedulers spread work over: the GPUs when there are
// any (the CPU only takes what nothing else can run), else the CPUs.
std::vector<int32_t> WorkDevices(const Cluster& cluster) {
  std::vector<int32_t> gpus = DevicesOfKind(cluster, DeviceKind::kGpu);
  if (!gpus.empty()) return gpus;
  std::vector<int32_t> all(cluster.num_devices());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

// A topological order that follows each chain as far as it goes before
// starting the next (Kahn's algorithm with a stack instead of a queue), so
// that filling devices in this order keeps chains of ops together.
std::vector<int32_t> DepthFirstTopologicalOrder(const Graph& graph) {
  const int32_t n = graph.num_ops();
  std::vector<int32_t> pending(n, 0);
  for (const DataEdge& e : graph.data_edges()) ++pending[e.dst];
  for (const ControlEdge& e : graph.control_edges()) ++pending[e.dst];
  std::vector<int32_t> stack;
  for (int32_t op = n - 1; op >= 0; --op) {
    if (pending[op] == 0) stack.push_back(op);
  }
  std::vector<int32_t> order;
  order.reserve(n);
  std::vector<int32_t> released;
  while (!stack.empty()) {
    int32_t op = stack.back();
    stack.pop_back();
    order.push_back(op);
    released.clear();
    for (int32_t e : graph.out_data_edges(op)) {
      int32_t next = graph.data_edges()[e].dst;
      if (--pending[next] == 0) released.push_back(next);
    }
    for (int32_t next : graph.control_successors(op)) {
      if (--pending[next] == 0) released.push_back(next);
    }
    // Lowest index on top, so that ties keep the graph's own order.
    stack.insert(stack.end(), released.rbegin(), released.rend());
  }
  return order;
}

// ETF-style list scheduling; with `favourite_child`, an op that is its
// parent's favourite child stays on the parent's device when it can (SCT).
// Refuses once it has looked at more than `max_looks` ready ops in all
// (kMaxListScheduleLooks: the scan is quadratic on wide graphs).
PlacerOutput EarliestTaskFirst(const PlacementProblem& problem, const std::vector<int32_t>& favourite_parent,
                               const char* method, int64_t max_looks) {
  const Graph& graph = problem.graph;
  const Cluster& cluster = problem.cluster;
  const int32_t n = graph.num_ops();
  const int32_t D = cluster.num_devices();
  ListScheduleState state(problem);
  std::vector<int32_t> pool = WorkDevices(cluster);

  // Each op's time on each device from the simulator's table, not the cost
  // model: the scan below weighs every ready op on every candidate device
  // at every step, and the cost model's lookup (op kind by name,
  // measured-time table) was most of its time (on a million-op graph that
  // fits h100x8, m-ETF ran 9 minutes unfinished; now 51 s to its look bound).
  const Simulator& simulator = problem.simulator;

  std::vector<double> finish_us(n, 0);
  std::vector<double> device_free_us(D, 0);
  std::vector<int32_t> pending(n, 0);
  for (const DataEdge& e : graph.data_edges()) pending[e.dst] += !state.deferred(e.src);
  for (const ControlEdge& e : graph.control_edges()) pending[e.dst] += !state.deferred(e.src);
  // Copies queue on link channels as in the simulator: each channel carries
  // one transfer at a time, and a tensor goes to a device once. Without
  // this, ETF spreads ops as if copies were free to overlap, and the
  // simulator then finds the links jammed.
  const Cluster& c = cluster;
  std::vector<double> channel_free_us(c.num_channels(), 0);
  std::unordered_map<int64_t, double> arrival_us;  // (tensor, device) -> when it is there
  auto tensor_key = [&](const DataEdge& edge, int32_t d) {
    return ((static_cast<int64_t>(edge.src) << 16 | edge.src_output) << 7) | d;
  };
  // When the input of `edge` can be on `d`; with `book`, reserves the copy.
  auto input_arrival_us = [&](const DataEdge& edge, int32_t d, bool book) {
    int32_t from = state.device_of(edge.src);
    if (from == d) return finish_us[edge.src];
    auto known = arrival_us.find(tensor_key(edge, d));
    if (known != arrival_us.end()) return known->second;
    const int64_t bytes = graph.op(edge.src).outputs[edge.src_output].bytes;
    double t = finish_us[edge.src];
    for (const Hop& hop : c.Route(from, d)) {
      t = std::max(t, channel_free_us[hop.channel]) + c.HopTimeUs(hop, bytes);
      if (book) channel_free_us[hop.channel] = t;
    }
    if (book) arrival_us[tensor_key(edge, d)] = t;
    return t;
  };
  auto data_ready_us = [&](int32_t op, int32_t d, bool book) {
    double t = 0;
    for (int32_t e : graph.in_data_edges(op)) {
      const DataEdge& edge = graph.data_edges()[e];
      if (state.deferred(edge.src)) continue;  // it will sit beside its unit
      t = std::max(t, input_arrival_us(edge, d, book));
    }
    for (int32_t src : graph.control_predecessors(op)) t = std::max(t, finish_us[src]);
    return t;
  };
  std::vector<int32_t> ready;
  auto make_ready = [&](int32_t op) { ready.push_back(op); };
  for (int32_t op = 0; op < n; ++op) {
    if (pending[op] == 0 && !state.deferred(op)) make_ready(op);
  }

  int64_t looks = 0;
  size_t most_ready = 0;
  while (!ready.empty()) {
    // Quadratic on a wide graph (up to kMaxListScheduleLooks looks): a stop
    // drops the schedule half made.
    ThrowIfStopRequested();
    if (state.placed_ops() == n / 2) StopTestPoint("list-schedule");
    looks += static_cast<int64_t>(ready.size());
    most_ready = std::max(most_ready, ready.size());
    if (looks > max_looks) {
      throw Error(std::string(method) + ": " + std::to_string(n) + " ops with up to " + std::to_string(most_ready) +
                  " ready at once: looking at every ready op at each step (quadratic on a graph this wide) passed " +
                  "the bound of " + std::to_string(max_looks) + " looks with " + std::to_string(state.placed_ops()) +
                  " ops placed");
    }
    // For each ready op its earliest-finishing device; then the op that can
    // start first. (On identical devices this is plain ETF; picking the
    // device by finish keeps slow devices from winning on start alone.)
    size_t best_index = 0;
    int32_t best_device = -1;
    double best_start = kInfinity, best_finish = kInfinity;
    for (size_t i = 0; i < ready.size(); ++i) {
      int32_t op = ready[i];
      auto candidates = state.Candidates(op, pool);
      int32_t parent = favourite_parent.empty() ? -1 : favourite_parent[op];
      if (parent >= 0 && candidates.Contains(state.device_of(parent))) {
        candidates.size = 0;
        candidates.Add(state.device_of(parent));
      }
      int32_t op_device = -1;
      double op_start = kInfinity, op_finish = kInfinity;
      for (int32_t d : candidates) {
        double start = std::max(device_free_us[d], data_ready_us(op, d, /*book=*/false));
        double finish = start + simulator.OpTimeUs(op, d);
        // The first candidate even at an infinite time, so that an op no
        // device can run still gets one (the simulator then says why).
        if (op_device < 0 || finish < op_finish) {
          op_device = d;
          op_start = start;
          op_finish = finish;
        }
      }
      if (best_device < 0 || op_start < best_start || (op_start == best_start && op_finish < best_finish)) {
        best_index = i;
        best_device = op_device;
        best_start = op_start;
        best_finish = op_finish;
      }
    }
    int32_t op = ready[best_index];
    ready[best_index] = ready.back();
    ready.pop_back();
    data_ready_us(op, best_device, /*book=*/true);
    state.Place(op, best_device);
    finish_us[op] = best_finish;
    device_free_us[best_device] = best_finish;
    auto release = [&](int32_t next) {
      if (--pending[next] == 0) make_ready(next);
    };
    for (int32_t e : graph.out_data_edges(op)) release(graph.data_edges()[e].dst);
    for (int32_t next : graph.control_successors(op)) release(next);
  }
  // Every op not deferred must have been released and placed; one that was
  // not would leave its unit on no device.
  for (int32_t op = 0; op < n; ++op) {
    if (!state.deferred(op) && state.device_of(op) < 0) {
      throw std::logic_error("list scheduler: op '" + ForMessage(graph.op(op).name) + "' was never ready");
    }
  }
  state.PlaceDeferred(pool);
  return state.Finish();
}

}  // namespace

PlacerOutput PlaceMTopo(const PlacementProblem& problem) {
  const Graph& graph = problem.graph;
  const Cluster& cluster = problem.cluster;
  ListScheduleState state(problem);
  std::vector<int32_t> pool = WorkDevices(cluster);

  // Each device's share of the total work, by speed.
  double total_work_us = 0;
  for (int32_t op = 0; op < graph.num_ops(); ++op) total_work_us += FastestOpTimeUs(problem, op);
  double total_speed = 0;
  for (int32_t d : pool) total_speed += cluster.devices[d].peak_flops_per_s;
  std::vector<double> load_us(cluster.num_devices(), 0);

  // A unit's whole work counts where its first op goes, since the rest of
  // it (its backward and update ops) must follow.
  const Grouping& units = state.units();
  std::vector<double> unit_work_us(units.num_groups(), 0);
  for (int32_t op = 0; op < graph.num_ops(); ++op) unit_work_us[units.group_of_op[op]] += FastestOpTimeUs(problem, op);

  size_t current = 0;
  for (int32_t op : DepthFirstTopologicalOrder(graph)) {
    if (state.deferred(op)) continue;
    if (state.unit_device(op) >= 0) {
      state.Place(op, state.unit_device(op));
      continue;
    }
    // Fill the current device to its share, then move on; skip devices
    // where the op does not fit.
    double share = total_work_us * cluster.devices[pool[current]].peak_flops_per_s / total_speed;
    if (load_us[pool[current]] >= share && current + 1 < pool.size()) ++current;
    auto candidates = state.Candidates(op, pool);
    int32_t d = *candidates.begin();
    for (size_t i = current; i < pool.size(); ++i) {
      if (candidates.Contains(pool[i])) {
        d = pool[i];
        break;
      }
    }
    load_us[d] += unit_work_us[units.group_of_op[op]];
    state.Place(op, d);
  }
  state.PlaceDeferred(pool);
  return state.Finish();
}

PlacerOutput PlaceMEtf(const PlacementProblem& problem) { return PlaceMEtf(problem, kMaxListScheduleLooks); }

PlacerOutput PlaceMEtf(const PlacementProblem& problem, int64_t max_looks) {
  return EarliestTaskFirst(problem, {}, "m_etf", max_looks);
}

PlacerOutput PlaceMSct(const PlacementProblem& problem) { return PlaceMSct(problem, kMaxListScheduleLooks); }

PlacerOutput PlaceMSct(const PlacementProblem& problem, int64_t max_looks) {
  // Favourite children (the SCT rule of Hanen and Munier): each op keeps
  // the consumer it sends the most bytes to on its own device, each child
  // the favourite of at most one parent. Baechi derives them from an LP
  // relaxation; the greedy choice by bytes gives the same pairs on the
  // chain-like training graphs devplace places.
  const Graph& graph = problem.graph;
  std::vector<int32_t> favourite_parent(graph.num_ops(), -1);
  for (int32_t op : graph.topological_order()) {
    int32_t best_child = -1;
    int64_t best_bytes = -1;
    for (int32_t e : graph.out_data_edges(op)) {
      const DataEdge& edge = graph.data_edges()[e];
      int64_t bytes = graph.op(op).outputs[edge.src_output].bytes;
      if (favourite_parent[edge.dst] < 0 && bytes > best_bytes) {
        best_child = edge.dst;
        best_bytes = bytes;
      }
    }
    if (best_child >= 0) favourite_parent[best_child] = op;
  }
  return EarliestTaskFirst(problem, favourite_parent, "m_sct", max_looks);
}

}  // namespace devplace
