// The real executor (docs/executor.md): runs a training step of a graph
// under a placement on this machine's devices. Each CPU device is worker
// threads pinned to the cores it owns (one per core, each running one op at
// a time with torch's intra-op threads at 1); a GPU device is one thread
// driving its CUDA device. An op starts when its inputs have arrived; each
// device runs its ready ops in the order they became ready (ops released
// together go by the simulator's rank); a tensor read on another device is
// copied there, one copy at a time per ordered pair of devices, by the
// worker of the pair's CPU device between its ops (by a thread of its own
// between two GPUs); memory is accounted by the simulator's rules and
// a device that would pass its usable memory stops the step, cleanly.
//
// The answer has the simulator's shape (SimResult), so everything that
// reports a simulated step reports a real one. Torch is used only in the
// .cc files; this header does not include it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "sim/measure.h"
#include "sim/placement.h"
#include "sim/simulator.h"

namespace devplace {

struct ExecOptions {
  uint64_t seed = 0;           // the values of the step's inputs and variables
  bool record_events = false;  // op, copy and memory events (for --trace)
  // Ops whose outputs (then their kernel state: a variable's value, an
  // optimizer's slots) the step hands back as raw bytes, for tests.
  std::vector<int32_t> keep_outputs_of;
  // A step still running after this many seconds stops and fails ("time
  // limit"), checked whenever a device takes its next op (a kernel already
  // running is not interrupted); 0: no limit.
  double step_time_limit_s = 0;
};

// An op type that ran the stand-in instead of a real kernel.
struct StandInUse {
  std::string type;
  int32_t ops = 0;
  double busy_us = 0;  // their kernel time, summed
  std::string why;     // "no kernel", or why the kernel declined the first such op
};

struct ExecStep {
  // Step time, per device busy time by phase, copy time and bytes, peak
  // memory by the executor's accounting, out of memory, events.
  SimResult result;
  std::vector<double> op_time_us;          // per op: its kernel's time (0 where it did not run)
  std::vector<bool> op_stand_in;           // per op: ran the stand-in
  std::vector<StandInUse> stand_ins;       // by type, most time first
  double busy_us = 0;                      // every op's kernel time, summed
  std::vector<std::vector<uint8_t>> kept;  // per ExecOptions::keep_outputs_of entry

  // The stand-ins' share of the summed kernel time (0 when nothing ran).
  double stand_in_share() const;
};

class Executor {
 public:
  // `graph` and `cluster` must outlive the executor. Throws Error naming the
  // cluster when it does not describe this machine: a CPU device that owns
  // no cores, a core this process may not run on, a GPU torch does not see.
  Executor(const Graph& graph, const Cluster& cluster, ExecOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // One step. A placement CheckPlacement refuses comes back invalid, with
  // the reason; one that runs out of memory comes back with oom set and
  // the device named in the reason. Kernel state (variables, slots) stays
  // on its device between steps while the op stays there.
  ExecStep RunStep(const Placement& placement);

  const Graph& graph() const;
  const Cluster& cluster() const;
  // Steps this executor has run (RunStep calls past the placement check).
  int64_t steps_run() const;

  struct Impl;  // executor.cc's; public so that its step can name it

 private:
  std::unique_ptr<Impl> impl_;
};

// The papers' protocol on the real machine: `steps` steps (at least 2), the
// first dropped (it pays for first-touch allocation and kernels' set-up),
// the mean of the rest. A fresh executor (no step run yet) runs one more
// step first and drops it too: its second step still faults the heap's new
// pages in. `last` is the last step in full; the protocol's
// `last` field is its result.
struct ExecMeasurement {
  Measurement protocol;
  ExecStep last;
};
ExecMeasurement MeasureRealStepTime(Executor& executor, const Placement& placement, int32_t steps);

// Throws Error naming `source` unless every device of `cluster` is on this
// machine (what the Executor's constructor checks).
void CheckClusterIsThisMachine(const Cluster& cluster, const std::string& source);

}  // namespace devplace
