// Internals of the exact placer (exact_placer.cc), for its tests: the bound
// that prunes partial placements, the memory check, and which devices are
// interchangeable.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "graph/graph.h"
#include "graph/grouping.h"

namespace devplace::exact {

// Above this many units (co-location groups) `exact` does not search: it
// returns the best of the one-shot placers and says so.
inline constexpr int32_t kMaxUnits = 40;
// The budget when the problem gives none: simulator runs.
inline constexpr int64_t kDefaultMaxEvaluations = 100'000;
// Under an evaluation budget, each evaluation also pays for this many
// search nodes (bound computations), so that a search that prunes nearly
// everything still ends in time proportional to its budget.
inline constexpr int64_t kNodesPerEvaluation = 50;
// A unit not yet given a device.
inline constexpr int32_t kFree = -1;

// Lower bounds on the simulated step time of every completion of a partial
// placement of units (device_of_unit[u] = a device, or kFree), and a memory
// test that no completion can pass. Keeps scratch buffers: one per thread.
class PartialBound {
 public:
  PartialBound(const Graph& graph, const Cluster& cluster, const CostModel& cost, const Grouping& units);

  // Devices that can run every op of `unit`, in cluster order.
  const std::vector<int32_t>& allowed_devices(int32_t unit) const { return allowed_[unit]; }

  // A lower bound on the step time the simulator gives any valid placement
  // that keeps the fixed units of `device_of_unit` where they are. The proof
  // is at the definition.
  double StepTimeLowerBoundUs(std::span<const int32_t> device_of_unit) const;

  // True when every completion of `device_of_unit` runs out of memory: some
  // device must at one moment hold more than its usable memory.
  bool MustRunOutOfMemory(std::span<const int32_t> device_of_unit) const;

 private:
  // An input tensor of an op, counted once however many edges read it.
  struct Input {
    int32_t producer;
    int64_t remote_bytes;  // what a copy from another device allocates
    int64_t local_bytes;   // what the producer's own copy holds (0 for views)
  };

  // A tensor that some op reads, and the distinct ops that read it.
  struct Tensor {
    int32_t producer;
    int64_t bytes;
    std::vector<int32_t> consumers;
  };

  const Graph& graph_;
  const Cluster& cluster_;
  int32_t num_devices_;
  std::vector<int32_t> unit_of_op_;
  std::vector<std::vector<int32_t>> allowed_;
  std::vector<double> time_us_;     // [op * devices + device]; infinite where its unit cannot go
  std::vector<double> fastest_us_;  // per op, over its unit's devices
  // A copy's time over its route on idle links: the hops' latencies plus
  // bytes over each hop's bandwidth, per (from, to) pair, in two parts, so
  // that the table does not grow with the number of edges.
  std::vector<double> route_latency_us_;   // [from * devices + to]
  std::vector<double> route_us_per_byte_;  // [from * devices + to]
  std::vector<double> edge_bytes_;         // per data edge: its tensor's bytes
  double TransferUs(size_t edge, int32_t from, int32_t to) const {
    const size_t pair = static_cast<size_t>(from) * num_devices_ + to;
    return route_latency_us_[pair] + edge_bytes_[edge] * route_us_per_byte_[pair];
  }
  std::vector<int32_t> parallel_ops_;  // per device
  int32_t total_slots_ = 0;
  std::vector<int64_t> usable_bytes_;       // per device
  std::vector<int64_t> start_bytes_;        // per op: outputs and scratch allocated when it starts
  std::vector<std::vector<Input>> inputs_;  // per op
  std::vector<Tensor> tensors_;
  // One op as the contention terms see it: it cannot start before
  // head_us, runs time_us, and the step goes on at least tail_us after it.
  struct Job {
    double head_us;
    double time_us;
    double tail_us;
  };
  void EarliestStarts(std::span<const int32_t> device_of_unit) const;
  void ShortestTails(std::span<const int32_t> device_of_unit) const;
  void AddTransferJobs(std::span<const int32_t> device_of_unit) const;
  static double ContentionBoundUs(std::vector<Job>& jobs, int32_t slots);

  // Scratch, [op * devices + device]; infinite where the op cannot be.
  mutable std::vector<double> start_us_;
  mutable std::vector<double> tail_us_;
  mutable std::vector<double> min_finish_us_;  // per op, over its devices
  mutable std::vector<double> min_tail_us_;    // per op: the shortest tail plus its time, over its devices
  mutable std::vector<Job> jobs_;
  mutable std::vector<std::vector<Job>> jobs_of_device_;
  mutable std::vector<std::vector<Job>> jobs_of_channel_;
  mutable std::vector<double> consumer_tail_us_;  // per device, for one tensor
};

// Classes of interchangeable devices: relabelling devices within a class
// turns any placement into one with exactly the same simulation. Empty when
// the cluster offers no such guarantee (shared buses, staged routes), so the
// search then breaks no symmetry. Each class lists its devices in cluster
// order; a device in no listed class is alone in its class.
std::vector<std::vector<int32_t>> InterchangeableDevices(const Graph& graph, const Cluster& cluster,
                                                         const CostModel& cost);

}  // namespace devplace::exact
