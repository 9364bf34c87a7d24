// `devplace profile` (issue 17's calibration): times every op of a graph
// with its real kernel on this machine's devices, one device of each kind,
// and turns the times into the op-times table the simulator reads
// (docs/op-times-format.md), so that simulated step times are this
// machine's. This header does not include torch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/op_time_table.h"
#include "exec/executor.h"
#include "graph/graph.h"

namespace devplace {

struct ProfileOptions {
  // Steps run on each profiled device; with more than one the first is
  // dropped (it pays for first touches), and each op's time is the median
  // of the rest.
  int32_t steps = 10;
  uint64_t seed = 0;  // the values of the step's inputs and variables
};

// What profiling one device found.
struct ProfiledDevice {
  int32_t device = 0;  // the device every op that can ran on
  DeviceKind kind = DeviceKind::kCpu;
  int32_t ops = 0;          // ops timed on it
  double step_time_us = 0;  // the measured step (median of the kept steps)
  double kernels_us = 0;    // the ops' median kernel times, summed
  // The executor's own time per op (hand-over, bookkeeping), spread over
  // the ops: (step x parallel ops - kernels) / ops, at least 0. Added to
  // every entry, as a table's time replaces the whole estimate.
  double overhead_us_per_op = 0;
  std::vector<StandInUse> stand_ins;  // types that ran a stand-in (timed as run)
};

struct OpTimeProfile {
  OpTimeTable table;  // with host_contention where it was measured
  // The host's CPU devices all running the step at once against the first
  // alone (median steps); 0 and 0 with fewer than two CPU devices owning
  // cores.
  double loaded_step_time_us = 0;
  double alone_step_time_us = 0;
  std::vector<ProfiledDevice> devices;  // one per device of the cluster, in order
  int32_t entries_with_flops = 0;       // entries told apart by FLOPs
};

// Runs the graph on each device of the cluster in turn (ops that cannot
// run on its kind go to the first device that can) and builds the table:
// the first device of a kind gives the kind's entries, every other device
// of that kind entries of its own (OpTimeEntry::device), as devices of one
// kind need not run at one speed. Per device, one entry per (type,
// first-output shape), the mean of its ops' median times plus the
// executor's overhead per op; where ops of one such key differ in FLOPs,
// one entry per FLOP count instead. Where two or more CPU devices own
// cores of this machine, it also runs the step on all of them at once,
// each its own copy, and writes how much slower the first ran as the
// table's host_contention. Throws Error when the cluster is not this
// machine or the graph does not fit on a profiled device (naming it).
OpTimeProfile ProfileOpTimes(const Graph& graph, const Cluster& cluster, const ProfileOptions& options);

// The cost model's uncalibrated roofline against the profile, per op type
// on one profiled device: what the presets' and an unprofiled cluster's
// numbers are worth, type by type.
struct RooflineError {
  std::string op_type;
  int32_t ops = 0;
  double measured_us = 0;  // the profile's entries for its ops, summed
  double roofline_us = 0;  // the formula's estimates for them, summed
};
// Types by measured time, most first, for `device` (one profile.devices
// names).
std::vector<RooflineError> CompareWithRoofline(const Graph& graph, const Cluster& cluster,
                                               const OpTimeProfile& profile, int32_t device);

}  // namespace devplace
