// The one training loop of the learned placers (2017 §3.1, §3.4): start
// (resume a checkpoint, or measure the start probes and warm-start), then
// updates until a budget is spent or a stop is asked, each update made
// whole or dropped, then the last checkpoint. Its two modes are what it
// trains: one graph placed by one or more controllers (`place --method
// rl|hdp|gdp|mars`, place_trainer.cc) or one network across several graphs
// (`devplace train`, batch_trainer.cc). No torch in this header.
#pragma once

#include <cstdint>

namespace devplace {

class TrainingMode {
 public:
  virtual ~TrainingMode() = default;

  // Resumes from the checkpoint or starts afresh, and opens the outputs.
  // Everything that can fail on the inputs happens before the first write.
  virtual void Start() = 0;

  // Controllers that update the shared parameters at once, each on a
  // thread of its own when there are several.
  virtual int32_t num_controllers() const = 0;

  // A stop was asked or a budget is spent (TrainingBudget::Done).
  virtual bool Done() const = 0;

  // One update by `controller` (its progress reported, a checkpoint written
  // when due), or none: a stop in the middle drops it whole.
  virtual void Step(int32_t controller) = 0;

  // After the search: the last checkpoint or output.
  virtual void Finish() = 0;
};

// What every training run sets before it starts: torch's own intra-op
// threads off (the parallelism is the environment's workers and the
// controllers, which they would only fight for the cores), and autograd's
// megabyte-sized buffers kept on the heap instead of mmap, whose page faults
// made training about half as fast.
void ConfigureProcessForTraining();

// Start, steps until Done, Finish. The first exception a controller's
// thread throws stops every controller and is rethrown.
void RunTrainingLoop(TrainingMode& mode);

}  // namespace devplace
