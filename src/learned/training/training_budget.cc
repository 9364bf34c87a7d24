#include "learned/training/training_budget.h"

#include "learned/learned_placer.h"
#include "util/stop_request.h"

namespace devplace {

double TrainingBudget::Seconds() const {
  return seconds_before_ + std::chrono::duration<double>(Clock::now() - start_).count();
}

bool TrainingBudget::Done(int64_t steps, int64_t samples) const {
  if (options_.zero_shot) return true;
  if (StopRequested()) return true;
  if (options_.max_steps > 0 && steps >= options_.max_steps) return true;
  if (options_.max_samples > 0 && samples >= options_.max_samples) return true;
  if (options_.max_seconds > 0 && Seconds() >= options_.max_seconds) return true;
  return options_.max_steps <= 0 && options_.max_samples <= 0 && options_.max_seconds <= 0;
}

bool TrainingBudget::CheckpointDue(int64_t steps) const {
  if (options_.checkpoint_every > 0 && steps % options_.checkpoint_every == 0) return true;
  return options_.checkpoint_seconds > 0 &&
         std::chrono::duration<double>(Clock::now() - last_checkpoint_).count() >= options_.checkpoint_seconds;
}

}  // namespace devplace
