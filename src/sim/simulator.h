// Event-driven simulation of one training step under a placement: each
// device runs its ready ops in the order they became ready, each tensor that
// crosses devices is sent once per destination and queues on its link's
// channel, and memory is allocated and freed as the step goes. The result is
// the step time and why.
//
// One graph gives one answer, whatever the order of its file: every tie is
// broken by the op's rank in a canonical topological order (names break its
// own ties), and at each instant all events end before anything starts, so
// frees come before allocations. docs/simulator.md lists the rules.
//
// A Simulator keeps scratch buffers between runs to stay fast; use one per
// thread.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "graph/graph.h"
#include "sim/placement.h"
#include "util/random.h"

namespace devplace {

// A byte count (memory in use, bytes copied) that would pass int64's limit
// stays here: "at least this much", never a wrapped-around small number.
inline constexpr int64_t kSaturatedBytes = std::numeric_limits<int64_t>::max();

// a + b, or kSaturatedBytes where that would pass it.
inline int64_t SaturatingAddBytes(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? kSaturatedBytes : std::numeric_limits<int64_t>::min();
  return sum;
}

struct NoiseOptions {
  double jitter = 0;               // std dev of log op/transfer time: x exp(N(0, j^2) - j^2/2)
  double failure_probability = 0;  // chance a step fails for no reason of its own
  bool enabled() const { return jitter > 0 || failure_probability > 0; }
};

struct SimOptions {
  bool record_events = false;  // fill SimResult's event lists
  bool stop_at_oom = false;    // end the run as soon as a device is out of memory
  NoiseOptions noise;
  uint64_t seed = 0;           // the noise's seed; ignored without noise
};

struct DeviceStats {
  double compute_us[kNumPhases] = {0, 0, 0, 0};  // busy time, by phase
  double copy_in_us = 0;   // time of transfer hops arriving here
  double copy_out_us = 0;  // time of transfer hops leaving here
  int64_t bytes_in = 0;
  int64_t bytes_out = 0;
  int64_t persistent_bytes = 0;
  int64_t peak_memory_bytes = 0;  // kSaturatedBytes if the count passed int64
  int32_t num_ops = 0;
  bool oom = false;

  double compute_total_us() const { return compute_us[0] + compute_us[1] + compute_us[2] + compute_us[3]; }
};

struct OpEvent {
  int32_t op;
  int32_t device;
  double start_us;
  double end_us;
};

// One hop of one tensor's trip to another device.
struct TransferEvent {
  int32_t src_op;
  int32_t src_output;
  int32_t from_device;
  int32_t to_device;
  int32_t channel;
  double start_us;
  double end_us;
  int64_t bytes;
};

struct MemoryEvent {
  int32_t device;
  double time_us;
  int64_t bytes_in_use;
};

struct SimResult {
  double step_time_us = 0;
  bool invalid = false;  // the placement cannot run at all; see reason
  bool oom = false;      // some device ran out of memory
  bool failed = false;   // a sporadic failure from the noise model
  std::string reason;
  std::vector<DeviceStats> devices;
  std::vector<OpEvent> op_events;
  std::vector<TransferEvent> transfer_events;
  std::vector<MemoryEvent> memory_events;

  bool ok() const { return !invalid && !oom && !failed; }
  double step_time_s() const { return step_time_us * 1e-6; }
};

class Simulator {
 public:
  // `graph`, `cluster` and `cost` must outlive the simulator. Op times are
  // computed here, once.
  Simulator(const Graph& graph, const Cluster& cluster, const CostModel& cost);
  ~Simulator();
  Simulator(Simulator&&) noexcept;

  SimResult Run(const Placement& placement, const SimOptions& options = {});

  // Incremental evaluation (FlexFlow's delta simulation, by snapshots).
  // Remember runs `placement` like Run with default options and keeps
  // snapshots of its timeline now and then. RunChanged evaluates a
  // placement that differs from the remembered one at most at
  // `changed_ops` (op indices; extra ones cost time, missing ones give a
  // wrong answer): it resumes from the last snapshot taken before any
  // changed op could matter (the end of the first of its producers to end,
  // counted in events, not time: at one instant ops that take no time end
  // and start again and again; a changed op with no inputs matters from
  // the start) and
  // returns exactly what Run(placement) would, bit for bit. KeepChanged
  // makes the last RunChanged placement the remembered one. Without a
  // remembered placement, with a saturated memory count, or when a changed
  // op matters from the start, RunChanged runs in full.
  SimResult Remember(const Placement& placement);
  SimResult RunChanged(const Placement& placement, std::span<const int32_t> changed_ops);
  void KeepChanged();
  // What the last RunChanged skipped: the share of the remembered run's
  // events before the snapshot it resumed from (0 for a full run).
  double last_skipped_fraction() const { return last_skipped_fraction_; }

  // One plain topological pass: each op starts when its inputs are done,
  // with no queues, links or memory. The benchmark's yardstick.
  double PlainPassUs(const Placement& placement) const;

  // The host-core copy model (on wherever the cluster has host devices);
  // off, copies on host devices cost their links only, as before it. For
  // the fidelity benchmark's before and after.
  void set_copies_use_host_cores(bool on);

  const Graph& graph() const { return *graph_; }
  const Cluster& cluster() const { return *cluster_; }
  // The op's compute time on the device, as a run charges it (from the
  // cost model, computed once here): placers that weigh every op on every
  // device (the list schedulers) read it rather than ask the cost model.
  double OpTimeUs(int32_t op, int32_t device) const {
    return op_time_us_[static_cast<size_t>(slot_of_[op]) * num_devices_ + device];
  }

 private:
  struct Scratch;   // per-run state, reused between runs
  struct Snapshot;  // a run's state at the start of an instant
  struct Memory;    // the remembered run and the last changed one
  template <bool kPlain>
  class Step;       // one run of the step, event by event

  // Calls body(step) with a Step for `result` and `options`: the plain one
  // where nothing needs the general one's checks.
  template <typename Body>
  void WithStep(SimResult& result, const SimOptions& options, Body&& body);

  // Checks `placement` and lays it out by slot in the scratch; false (with
  // result's reason) if it cannot run.
  bool Prepare(const Placement& placement, SimResult& result);
  // Computes may_saturate_ from the graph and cluster.
  bool MaySaturate() const;

  const Graph* graph_;
  const Cluster* cluster_;
  int32_t num_devices_;

  // Flattened, run-independent facts about the graph, indexed by slot: the
  // op's rank, its position in the canonical topological order.
  std::vector<int32_t> order_;             // slot -> op index
  std::vector<double> op_time_us_;         // [op * devices + device]
  std::vector<int32_t> pending_inputs_;    // data + control in-edges per op
  std::vector<int32_t> source_slots_;      // slots with no in-edges, ascending
  std::vector<int32_t> tensor_begin_;      // op -> first tensor id; size ops+1
  // What a run reads of a tensor, together: one cache line, not four.
  struct TensorFacts {
    int64_t bytes = 0;           // as sent to other devices
    int64_t local_bytes = 0;     // allocated where produced (0 for views)
    int32_t producer = 0;        // slot
    int32_t consumer_begin = 0;  // first consumer slot
  };
  int32_t num_tensors_ = 0;
  std::vector<TensorFacts> tensor_;        // by tensor id; one more entry ends the last consumer list
  std::vector<int32_t> consumers_;         // consumer slot, by rank (one per data edge)
  std::vector<int32_t> input_begin_;       // op -> first input slot; size ops+1
  struct InputEdge {
    int32_t tensor;
    int32_t producer;  // slot, kept here to save a lookup per input
  };
  std::vector<InputEdge> inputs_;          // per slot (one per data edge), by tensor
  std::vector<int32_t> control_begin_;     // slot -> first control successor; size ops+1
  std::vector<int32_t> control_successors_;
  std::vector<int32_t> colocation_leader_; // op (not slot) -> first op of its co-location group, or itself
  std::vector<int32_t> colocated_slots_;   // slots whose op has a leader other than itself, ascending
  std::vector<uint8_t> op_phase_;          // op -> Phase
  std::vector<int64_t> op_start_bytes_;    // op -> outputs + scratch, allocated when it starts (saturated)
  std::vector<int64_t> op_temporary_bytes_;
  std::vector<int64_t> op_persistent_bytes_;  // by slot: the graph's ops are too large to sweep per run
  std::vector<int32_t> parallel_ops_;      // device -> ops it runs at once
  // Host contention (OpTimeTable::host_contention): the devices that share
  // this machine's cores, and how much slower an op on one gets per other
  // such device busy when it starts.
  std::vector<char> shares_host_;          // device -> 1 if a CPU device owning cores
  double contention_per_busy_device_ = 0;
  // A copy to or from a host device is done by a host core (that device's
  // worker in the executor), which runs nothing else meanwhile: the hop
  // takes a compute slot of that device (docs/simulator.md).
  bool copies_use_host_cores_ = false;
  std::vector<int32_t> copy_engine_;       // [from * devices + to] -> Cluster::CopyEngine
  std::vector<std::span<const Hop>> route_;  // [from * devices + to] -> Cluster::Route, one load per send
  bool wakes_ = false;  // some device wakes late when idle (Device::wake_up_us)
  std::vector<int32_t> slot_of_;           // op -> slot
  std::vector<int32_t> producer_begin_;    // slot -> first predecessor slot (data and control); size ops+1
  std::vector<int32_t> producers_;
  // Whether some byte count of a run (memory in use, bytes copied) could
  // come near int64's limit, so that runs must saturate their sums: false
  // for any real graph, where runs skip the checks.
  bool may_saturate_ = true;
  std::unique_ptr<Scratch> scratch_;
  std::unique_ptr<Memory> memory_;
  double last_skipped_fraction_ = 0;
};

}  // namespace devplace
