// What both modes of the training loop (placing one graph, training across
// graphs) keep the same way: the seconds a run has taken (across resumes),
// when its budgets are spent, and when a checkpoint is due by count or time.
// No torch in this header.
#pragma once

#include <chrono>
#include <cstdint>

namespace devplace {

struct LearnedOptions;

class TrainingBudget {
 public:
  explicit TrainingBudget(const LearnedOptions& options) : options_(options) {}

  // Starts the clock; `seconds_before` were spent before a resume.
  void Start() { start_ = Clock::now(); }
  void SetSecondsBefore(double seconds_before) { seconds_before_ = seconds_before; }
  double Seconds() const;

  // A stop was asked, or the steps, samples or seconds are spent. A run
  // given no budget at all is done at once (the commands always give one).
  bool Done(int64_t steps, int64_t samples) const;

  // After a step: every `checkpoint_every` steps, or when
  // `checkpoint_seconds` have passed since the last checkpoint.
  bool CheckpointDue(int64_t steps) const;
  void CheckpointWritten() { last_checkpoint_ = Clock::now(); }

 private:
  using Clock = std::chrono::steady_clock;
  const LearnedOptions& options_;
  double seconds_before_ = 0;
  Clock::time_point start_;
  Clock::time_point last_checkpoint_;
};

}  // namespace devplace
