// The parts of a training step both modes of the loop (placing one graph,
// training across graphs) do alike for one graph: its environment, its
// failing signal, and sampling K placements from its policy, measuring them
// and turning them into the batch that updates the policy.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "learned/policies/policy.h"
#include "learned/training/algorithm.h"
#include "learned/training/reward.h"
#include "placers/placer.h"
#include "sim/environment.h"

namespace devplace {

struct LearnedOptions;

// The environment a graph's samples are measured on: options'
// make_environment, or the simulator with options' noise, measuring
// protocol and seed, `workers` threads and, with `grade_failures`, the
// memory overflow measured.
std::unique_ptr<Environment> MakeTrainingEnvironment(const PlacementProblem& problem, const LearnedOptions& options,
                                                     int32_t workers, bool grade_failures);

// K placements sampled at `step` and measured.
struct SampledBatch {
  std::vector<Placement> placements;
  std::vector<Outcome> outcomes;
  UpdateBatch used;       // what updates the policy: all before the cut-over, after it only those that ran (§3.1)
  double sum_time_s = 0;  // of the placements that ran
  int32_t ran = 0;
};

// Samples options.samples_per_step decisions from `pass` with `generator`
// (logit noise for the first options.logit_noise_steps steps), measures
// them on `environment` as batch `step` of noise stream `stream`, and
// rewards them (RewardOf).
SampledBatch SampleAndMeasure(Policy& policy, PolicyPass& pass, Environment& environment, torch::Generator& generator,
                              int64_t step, int32_t stream, const LearnedOptions& options, double failing_reward,
                              bool grade_failures);

}  // namespace devplace
