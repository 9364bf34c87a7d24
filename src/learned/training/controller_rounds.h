// What `place`'s controllers across processes (--controllers under a
// world; LearnedOptions::controller_ranks) tell each other besides their
// gradients: rank 0's start (the policy and Adam's state after its start
// probes, so every controller starts from the same bits), each
// controller's report after an update (its samples, its batch, its best
// placement when it improved, and the state a checkpoint keeps of it) and
// rank 0's word (go on, or done). No torch in this header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/placement.h"

namespace devplace {

struct ControllerReport {
  bool stepped = false;   // its update was made (not dropped by a stop)
  bool stop = false;      // a stop was asked on its rank
  int64_t samples = 0;    // placements measured this round that count
  double sum_time_s = 0;  // the step times of those that ran, summed
  int32_t ran = 0;
  int32_t used = 0;       // placements that updated the policy
  // Its best placement, when it improved since its last report (empty
  // otherwise), and its step time.
  Placement best;
  double best_time_s = 0;
  // What rank 0's checkpoint keeps of this controller after the update, so
  // that a resumed run goes on as the uninterrupted one: its baseline and
  // its generator's state (the bytes of torch's state tensor).
  double baseline = 0;
  std::string generator_state;
};

std::string EncodeReport(const ControllerReport& report);
// Throws Error unless it is a report of a placement of `num_ops` ops on
// `num_devices` devices (or none).
ControllerReport DecodeReport(const std::string& bytes, int32_t num_ops, int32_t num_devices);

struct ControllersStart {
  double failing_reward = 0;  // the failing signal rank 0 chose (or measured)
  // Each controller's baseline, in controller order: rank 0's after its
  // start for all, or on --resume each one's from the checkpoint.
  std::vector<double> baselines;
  int64_t step = 0;           // updates made (on --resume, the checkpoint's)
  bool resumed = false;       // `tensors` holds each controller's generator state too
  bool done = false;          // the budget is spent already (a zero-shot run, a stop)
  std::string tensors;        // the policy and Adam's state, serialised
};

std::string EncodeStart(const ControllersStart& start);
// Throws Error on a message of the wrong shape.
ControllersStart DecodeStart(const std::string& bytes);

}  // namespace devplace
