#include "learned/training/sampled_batch.h"

#include <cmath>

#include "learned/learned_placer.h"
#include "learned/training/step_profile.h"
#include "util/error.h"

namespace devplace {

std::unique_ptr<Environment> MakeTrainingEnvironment(const PlacementProblem& problem, const LearnedOptions& options,
                                                     int32_t workers, bool grade_failures) {
  SimulatedEnvironmentOptions environment;
  environment.workers = workers;
  environment.noise.jitter = options.jitter;
  environment.noise.failure_probability = options.failure_probability;
  environment.measure_steps = options.measure_steps;
  environment.seed = options.seed;
  environment.measure_overflow = grade_failures;
  if (options.make_environment) return options.make_environment(problem.graph, problem.cluster, problem.cost, environment);
  return std::make_unique<SimulatedEnvironment>(problem.graph, problem.cluster, problem.cost, environment);
}

SampledBatch SampleAndMeasure(Policy& policy, PolicyPass& pass, Environment& environment, torch::Generator& generator,
                              int64_t step, int32_t stream, const LearnedOptions& options, double failing_reward,
                              bool grade_failures) {
  SampleOptions sampling;
  sampling.logit_noise_std = step < options.logit_noise_steps ? options.logit_noise_std : 0.0;
  sampling.step = step;
  sampling.will_score = true;
  PolicySamples samples;
  {
    ScopedStepPhase timed(StepPhase::kSample);
    samples = pass.Sample(options.samples_per_step, generator, sampling);
  }
  SampledBatch batch;
  {
    ScopedStepPhase timed(StepPhase::kToPlacement);
    for (const Decision& decision : samples.decisions) batch.placements.push_back(policy.ToPlacement(decision));
  }
  {
    ScopedStepPhase timed(StepPhase::kMeasure);
    batch.outcomes = environment.Measure(batch.placements, step, stream);
  }
  CountProfiledSamples(static_cast<int64_t>(batch.outcomes.size()));
  const bool after_cutover = step >= options.cutover_step;
  for (size_t k = 0; k < batch.outcomes.size(); ++k) {
    if (batch.outcomes[k].ok) {
      batch.sum_time_s += batch.outcomes[k].step_time_s;
      ++batch.ran;
    }
    if (after_cutover && !batch.outcomes[k].ok) continue;
    batch.used.decisions.push_back(samples.decisions[k]);
    batch.used.rewards.push_back(RewardOf(batch.outcomes[k], failing_reward, grade_failures));
  }
  return batch;
}

}  // namespace devplace
